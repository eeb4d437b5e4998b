package mcp_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/mcp"
	"github.com/raven-agent/raven/internal/mcp/mcptest"
)

// reportP50 records each iteration's time and reports the median.
func reportP50(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkStdioToolCall is a model's call of an MCP tool as the agent
// makes it (registry validation, the JSON-RPC round trip over the pipes of
// a sandboxed stdio server, rendering and wrapping the result) against the
// echo tool, whose own work is a string concatenation: the time is
// Raven's and the SDK's overhead over the server's own.
func BenchmarkStdioToolCall(b *testing.B) {
	e := newEnv(b)
	m, err := mcp.New(mcp.Options{Config: mcp.Config{Servers: map[string]mcp.ServerConfig{"t": e.stdio()},
		CallTimeout: mcp.DefaultConfig().CallTimeout, IdleTimeout: mcp.DefaultConfig().IdleTimeout},
		Workspace: e.ws, Sandbox: e.sb, Registry: e.reg, Clock: e.clk})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close(context.Background())
	ctx := context.Background()
	if _, err := m.Tools(ctx, "t"); err != nil {
		b.Fatal(err)
	}
	call := llm.ToolCall{Name: "t__echo", Arguments: `{"text":"ping"}`}
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := e.reg.Run(ctx, call); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportP50(b, lat)
}

// BenchmarkInMemoryToolCall is the same call to the same server through the
// SDK's in-memory transport, with no process, pipe or sandbox between: the
// floor the stdio figure is compared with.
func BenchmarkInMemoryToolCall(b *testing.B) {
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	srv := mcptest.NewServer(0, nil)
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	args := json.RawMessage(`{"text":"ping"}`)
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	reportP50(b, lat)
}
