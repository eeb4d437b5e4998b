package gateway

import (
	"context"
	"errors"

	"github.com/raven-agent/raven/internal/approvals"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/strictjson"
)

// ApprovalsListParams are approvals.list's parameters.
type ApprovalsListParams struct {
	// All includes answered, expired and withdrawn requests.
	All   bool `json:"all,omitempty"`
	Limit int  `json:"limit,omitempty"`
}

// ApprovalsList is approvals.list's result, newest first.
type ApprovalsList struct {
	Approvals []approvals.Request `json:"approvals"`
}

// ApprovalsDecideParams are approvals.decide's parameters.
type ApprovalsDecideParams struct {
	ID       string             `json:"id"`
	Decision approvals.Decision `json:"decision"`
}

// registerApprovals adds the exec approvals methods to the gateway.
func (g *Gateway) registerApprovals() { RegisterApprovals(g.control, g.rt.Approvals()) }

// RegisterApprovals adds approvals.list (Read) and approvals.decide
// (Control) to srv. The store's authority then admits the operator or the
// device holding the conversation's Take Control, re-reading the
// credential for each call. Deciding in the process whose exec waits wakes
// it at once.
func RegisterApprovals(srv *controlapi.Server, st *approvals.Store) {
	srv.Handle("approvals.list", controlapi.Read, func(ctx context.Context, c *controlapi.Call) (any, error) {
		var p ApprovalsListParams
		if len(c.Params) > 0 && string(c.Params) != "null" {
			if err := strictjson.Decode(c.Params, &p); err != nil {
				return nil, controlapi.InvalidParams("approvals.list: %v", err)
			}
		}
		rs, err := st.List(ctx, approvals.ListOptions{All: p.All, Limit: p.Limit})
		if err != nil {
			return nil, approvalsRPCErr(err)
		}
		if rs == nil {
			rs = []approvals.Request{}
		}
		return ApprovalsList{Approvals: rs}, nil
	})
	srv.Handle("approvals.decide", controlapi.Control, func(ctx context.Context, c *controlapi.Call) (any, error) {
		var p ApprovalsDecideParams
		if err := strictjson.Decode(c.Params, &p); err != nil {
			return nil, controlapi.InvalidParams("approvals.decide: %v", err)
		}
		r, err := st.Decide(ctx, c.Principal, p.ID, p.Decision)
		if err != nil {
			return nil, approvalsRPCErr(err)
		}
		return r, nil
	})
}

// ApprovalErrorData is the data of a JSON-RPC error from the approvals
// methods: the precise reason, since expired and resolved share a code.
type ApprovalErrorData struct {
	Code string `json:"approvals_code"`
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
	re.Data = ApprovalErrorData{Code: code}
	return re
}
