package doctor

import (
	"fmt"

	"github.com/raven-agent/raven/internal/sandbox"
	"github.com/raven-agent/raven/internal/tools"
)

// sandboxMode reports how exec commands are confined. Without an OS
// sandbox exec never runs silently unconfined: it is off or approval-only,
// and the owner is told which.
func sandboxMode(o Options) Check {
	detect := o.Sandbox
	if detect == nil {
		detect = sandbox.Detect
	}
	m, ec := detect(), o.Config.Tools.Exec
	switch {
	case !ec.Enabled:
		return Check{Name: "sandbox", Status: OK, Detail: fmt.Sprintf("%s; exec is disabled (tools.exec.enabled false)", m)}
	case m.Available():
		net := "network off unless approved"
		if ec.Network {
			net = "network allowed (tools.exec.network)"
		}
		return Check{Name: "sandbox", Status: OK, Detail: fmt.Sprintf("%s; exec confined to the workspace, %s", m, net)}
	case ec.Unsandboxed == tools.UnsandboxedApprove:
		return Check{Name: "sandbox", Status: Warn, Detail: fmt.Sprintf("%s; exec is approval-only: every command waits for raven approvals", m),
			Fix: "use a Linux kernel with Landlock (5.13+, lsm=landlock)"}
	default:
		return Check{Name: "sandbox", Status: Warn, Detail: fmt.Sprintf("%s; exec is off: every command is refused", m),
			Fix: "use a Linux kernel with Landlock, or raven config set tools.exec.unsandboxed approve to approve each command"}
	}
}
