// Command server is the mcptest MCP server as a program of its own, for tests
// that drive the built raven binary (internal/e2e) and the figures.
package main

import (
	"os"

	"github.com/raven-agent/raven/internal/mcp/mcptest"
)

func main() { os.Exit(mcptest.Main(os.Args[1:])) }
