package runtime

import (
	"context"
	"path/filepath"

	"github.com/raven-agent/raven/internal/mcp"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

// buildMCP wires the configured MCP servers: their tools go into the
// agent's registry (from each server's cached listing, so no server starts
// at Build), stdio servers run under the exec sandbox with exec's
// unsandboxed policy and approvals, and Close stops them. It runs after
// approvals, which builds the sandbox.
func (r *Runtime) buildMCP(_ context.Context, _ Options) error {
	var err error
	r.mcp, err = mcp.New(mcp.Options{
		Config: r.cfg.MCP, Workspace: r.paths.Workspace(), CacheDir: filepath.Join(r.paths.Root, "mcp"),
		Sandbox: r.sandbox, Unsandboxed: r.cfg.Tools.Exec.Unsandboxed, Approver: r.approvals,
		Registry: r.toolReg, Clock: r.clk, Logger: r.log.With("component", "mcp"),
	})
	if err != nil {
		return err
	}
	r.AddCloser(r.mcp.Close)
	return nil
}

// prepareMCP lists, before a turn offers tools to the model, the servers
// whose tools are not known yet (configured, never started, no cache).
// The turn's conversation goes along: an approval to run a server
// unsandboxed is asked there.
func (r *Runtime) prepareMCP(ctx context.Context, t *spine.Turn) {
	if len(r.mcp.Names()) > 0 {
		r.mcp.Prepare(tools.WithTurn(ctx, tools.TurnInfo{Origin: t.Request.Origin, Conversation: t.Request.Conversation(),
			Channel: t.Request.Channel, ChatID: t.Request.ChatID}))
	}
}

// MCP is the MCP client: `raven mcp` and doctor reach the servers through it.
func (r *Runtime) MCP() *mcp.Manager { return r.mcp }
