package gateway

import (
	"context"
	"errors"

	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
)

// registerApprovals adds the exec approvals methods to the gateway.
func (g *Gateway) registerApprovals() { RegisterApprovals(g.control, g.rt.Approvals()) }

// RegisterApprovals adds approvals.list (Read) and approvals.decide
// (Control) to srv. The store's authority then admits the operator or the
// device holding the conversation's Take Control, re-reading the
// credential for each call. Deciding in the process whose exec waits wakes
// it at once.
func RegisterApprovals(srv *controlapi.Server, st *approvals.Store) {
	controlapi.Handle(srv, api.ApprovalsList, controlapi.Read,
		func(ctx context.Context, _ *controlapi.Call, p api.ApprovalsListParams) (api.ApprovalsListResult, error) {
			rs, err := st.List(ctx, approvals.ListOptions{All: p.All, Limit: p.Limit})
			if err != nil {
				return api.ApprovalsListResult{}, approvalsRPCErr(err)
			}
			if rs == nil {
				rs = []approvals.Request{}
			}
			return api.ApprovalsListResult{Approvals: rs}, nil
		})
	controlapi.Handle(srv, api.ApprovalsDecide, controlapi.Control,
		func(ctx context.Context, c *controlapi.Call, p api.ApprovalsDecideParams) (approvals.Request, error) {
			r, err := st.Decide(ctx, c.Principal, p.ID, p.Decision)
			if err != nil {
				return approvals.Request{}, approvalsRPCErr(err)
			}
			return r, nil
		})
}

// approvalsRPCErr maps the approvals contract's errors onto JSON-RPC ones;
// anything else stays internal.
func approvalsRPCErr(err error) error {
	var re *controlapi.RPCError
	var code string
	msg := err.Error()
	switch {
	case errors.Is(err, approvals.ErrInvalid):
		re, code = controlapi.InvalidParams("%s", msg), "invalid"
	case errors.Is(err, approvals.ErrNotFound):
		re, code = controlapi.NotFound("%s", msg), "not_found"
	case errors.Is(err, approvals.ErrForbidden):
		re, code = controlapi.Forbidden("%s", msg), "forbidden"
	case errors.Is(err, approvals.ErrExpired):
		re, code = controlapi.Conflict("%s", msg), "expired"
	case errors.Is(err, approvals.ErrResolved):
		re, code = controlapi.Conflict("%s", msg), "resolved"
	default:
		return err
	}
	re.Data = api.ApprovalErrorData{Code: code}
	return re
}
