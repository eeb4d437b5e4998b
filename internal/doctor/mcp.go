package doctor

import (
	"context"
	"fmt"
	"time"
)

// MCPServers starts MCP servers for the doctor's check; *mcp.Manager
// implements it.
type MCPServers interface {
	Names() []string
	// Check starts server name, lists its tools, stops it again and
	// returns how many tools it offers.
	Check(ctx context.Context, name string) (int, error)
}

// mcpCheckTimeout bounds each server's start in doctor, below any
// server's own call timeout, so one broken server does not stall the report.
const mcpCheckTimeout = 30 * time.Second

// mcpServers reports, for each configured MCP server, whether it starts and
// how many tools it lists.
func mcpServers(ctx context.Context, o Options) []Check {
	if o.MCP == nil {
		return nil
	}
	var out []Check
	for _, n := range o.MCP.Names() {
		cctx, cancel := context.WithTimeout(ctx, mcpCheckTimeout)
		tools, err := o.MCP.Check(cctx, n)
		cancel()
		name := "mcp " + n
		if err != nil {
			out = append(out, Check{Name: name, Status: Fail, Detail: err.Error(),
				Fix: fmt.Sprintf("check mcp.servers.%s in %s (docs/mcp.md); raven mcp tools %s shows the same error", n, o.Paths.Config(), n)})
			continue
		}
		out = append(out, Check{Name: name, Status: OK, Detail: fmt.Sprintf("started and listed %d tools", tools)})
	}
	return out
}
