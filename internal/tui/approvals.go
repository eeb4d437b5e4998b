package tui

import (
	"encoding/json"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/controlapi/api"
)

// Exec approval events (internal/gateway serves the approvals.* methods).
// An approval is its own contract, never an owner-question answer.
const (
	EventApprovalRequested = "approval.requested"
	EventApprovalResolved  = "approval.resolved"
)

// Approval is the contract's request record.
type Approval = approvals.Request

const approvalsUsage = "usage: /approvals · /approve ID [always] · /deny ID"

// approvalCommand runs /approvals, /approve ID [always] and /deny ID.
func (m *Model) approvalCommand(text string) tea.Cmd {
	f := strings.Fields(text)
	switch {
	case f[0] == "/approvals" && len(f) == 1:
		return rpc(m, "approvals", api.ApprovalsList, api.ApprovalsListParams{}, (*Model).approvalsListed)
	case f[0] == "/approve" && (len(f) == 2 || len(f) == 3 && f[2] == "always"):
		d := approvals.AllowOnce
		if len(f) == 3 {
			d = approvals.AllowAlways
		}
		return rpc(m, "approval-decide", api.ApprovalsDecide, api.ApprovalsDecideParams{ID: f[1], Decision: d}, (*Model).approvalDecided)
	case f[0] == "/deny" && len(f) == 2:
		return rpc(m, "approval-decide", api.ApprovalsDecide, api.ApprovalsDecideParams{ID: f[1], Decision: approvals.Deny}, (*Model).approvalDecided)
	}
	m.notice = approvalsUsage
	return nil
}

// isApprovalCommand reports whether text is one of approvalCommand's verbs.
func isApprovalCommand(text string) bool {
	verb, _, _ := strings.Cut(text, " ")
	return verb == "/approvals" || verb == "/approve" || verb == "/deny"
}

// pendingApprovals fetches the requests already waiting on connect: one
// made before this TUI attached (or while it was disconnected) still
// prompts.
func (m *Model) pendingApprovals() tea.Cmd {
	return rpc(m, "approvals-pending", api.ApprovalsList, api.ApprovalsListParams{}, (*Model).approvalsPending)
}

// approvalsPending prompts for the newest request waiting on connect; an
// older gateway without approvals still works for chat.
func (m *Model) approvalsPending(r reply[api.ApprovalsListResult]) tea.Cmd {
	if r.err == nil && len(r.resp.Approvals) > 0 {
		m.promptApproval(r.resp.Approvals[0], len(r.resp.Approvals))
	}
	return nil
}

func (m *Model) approvalsListed(r reply[api.ApprovalsListResult]) tea.Cmd {
	if r.err != nil {
		m.notice = r.what + " refused: " + r.err.Error()
		return nil
	}
	m.panel, m.panelTitle = nil, "approvals"
	if len(r.resp.Approvals) == 0 {
		m.panel = append(m.panel, "no pending approval requests")
	}
	for _, a := range r.resp.Approvals {
		m.panel = append(m.panel, describeApproval(a))
	}
	return nil
}

func (m *Model) approvalDecided(r reply[approvals.Request]) tea.Cmd {
	if r.err != nil {
		m.notice = r.what + " refused: " + r.err.Error()
		return nil
	}
	a := r.resp
	m.notice = fmt.Sprintf("%s: %s — %s", a.ID, a.Decision, a.Command)
	return nil
}

func describeApproval(a Approval) string {
	return fmt.Sprintf("%s  needs %s  (expires %s)  $ %s", a.ID, strings.Join(a.Grants, ", "),
		a.ExpiresAt.Local().Format("15:04:05"), a.Command)
}

// approvalEvent prompts the owner on a new request; the event feed is how
// a waiting exec reaches the TUI.
func (m *Model) approvalEvent(n Notification, kind string) {
	var ev struct {
		Payload Approval `json:"payload"`
	}
	if json.Unmarshal(n.Params, &ev) != nil || ev.Payload.ID == "" {
		return
	}
	if kind == EventApprovalRequested {
		m.promptApproval(ev.Payload, 1)
	}
}

// promptApproval shows the newest waiting request and how to answer it.
func (m *Model) promptApproval(a Approval, waiting int) {
	m.notice = fmt.Sprintf("approval needed: %s — /approve %s [always] · /deny %s", describeApproval(a), a.ID, a.ID)
	if waiting > 1 {
		m.notice += fmt.Sprintf(" (%d waiting: /approvals)", waiting)
	}
}
