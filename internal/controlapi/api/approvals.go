package api

import "github.com/raven-agent/raven/internal/approvals"

// Exec approvals (internal/approvals): their own contract, never an
// owner-question answer.
const (
	// ApprovalsList lists approval requests, newest first (Read).
	ApprovalsList Method[ApprovalsListParams, ApprovalsListResult] = "approvals.list"
	// ApprovalsDecide answers one request once (Control): the operator or
	// the device holding the conversation's Take Control.
	ApprovalsDecide Method[ApprovalsDecideParams, approvals.Request] = "approvals.decide"
)

// ApprovalsListParams are approvals.list's params.
type ApprovalsListParams struct {
	// All includes answered, expired and withdrawn requests.
	All   bool `json:"all,omitempty"`
	Limit int  `json:"limit,omitempty"`
}

// ApprovalsListResult is approvals.list's result.
type ApprovalsListResult struct {
	Approvals []approvals.Request `json:"approvals"`
}

// ApprovalsDecideParams are approvals.decide's params.
type ApprovalsDecideParams struct {
	ID       string             `json:"id"`
	Decision approvals.Decision `json:"decision"`
}

// ApprovalErrorData is the data of an approvals method's error: the precise
// reason (expired and resolved share the conflict code).
type ApprovalErrorData struct {
	Code string `json:"approvals_code"`
}
