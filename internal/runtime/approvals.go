package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/sandbox"
	"github.com/raven-agent/raven/internal/tools"
)

// buildApprovals opens the exec approvals contract and registers the exec
// tool confined by the OS sandbox, with the store as its approver. It runs
// after auth and the event log: deciding needs the one, and every request
// and resolution is recorded in the other.
func (r *Runtime) buildApprovals(ctx context.Context, o Options) error {
	ec := r.cfg.Tools.Exec
	var err error
	r.approvals, err = approvals.Open(ctx, r.db, approvals.Options{
		Clock: r.clk, Logger: r.log.With("component", "approvals"),
		Authority: approvals.NewAuthority(r.auth), TTL: ec.ApprovalTTL.D(),
		// Written at once rather than queued: the request event is how
		// an attached surface learns that a command waits for the owner.
		Emit: func(ctx context.Context, kind, conversation string, payload any) error {
			if req, ok := payload.(approvals.Request); ok && kind == approvals.KindRequested {
				// Said where the owner of a terminal chat looks too:
				// its stderr shows warnings.
				r.log.Warn("exec command waits for the owner's approval", "id", req.ID, "command", req.Command,
					"grants", req.Grants, "answer", "raven approvals approve "+req.ID+" (or deny)")
			}
			_, err := r.events.Append(context.WithoutCancel(ctx), kind, conversation, payload)
			return err
		},
	})
	if err != nil {
		return err
	}
	r.sandbox, err = sandbox.New(sandbox.Options{Workspace: r.paths.Workspace(), DataDir: r.paths.Root,
		EnvAllow: ec.EnvAllow, Mode: o.SandboxMode, Logger: r.log.With("component", "sandbox")})
	switch {
	case errors.Is(err, sandbox.ErrUnavailable):
		r.log.Warn("no OS sandbox for exec", "mode", r.sandbox.Mode().String(), "unsandboxed", ec.Unsandboxed)
	case err != nil:
		return fmt.Errorf("exec sandbox: %w", err)
	}
	if !ec.Enabled {
		return nil
	}
	ex, err := tools.NewExecWith(tools.ExecOptions{
		WS: r.workspace, DataDir: r.paths.Root, Timeout: ec.Timeout.D(), MaxOutput: ec.MaxOutput, Deny: ec.Deny,
		Sandbox: r.sandbox, Approver: r.approvals, AllowNetwork: ec.Network, Unsandboxed: ec.Unsandboxed,
	})
	if err != nil {
		return err
	}
	r.toolReg.Register(ex)
	return nil
}

// Approvals is the exec approvals contract: the control API lists and
// decides through it.
func (r *Runtime) Approvals() *approvals.Store { return r.approvals }

// SandboxMode is the confinement exec commands run under.
func (r *Runtime) SandboxMode() sandbox.Mode { return r.sandbox.Mode() }
