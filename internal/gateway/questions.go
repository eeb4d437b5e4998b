package gateway

import (
	"errors"

	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
)

// rpcErr maps the questions package's typed errors onto JSON-RPC errors.
func rpcErr[T any](v T, err error) (T, error) {
	if err == nil {
		return v, nil
	}
	var zero T
	var qe *questions.Error
	if !errors.As(err, &qe) {
		return zero, err
	}
	msg := err.Error()
	var re *controlapi.RPCError
	switch qe.Code() {
	case "invalid_params", "not_answer":
		re = controlapi.InvalidParams("%s", msg)
	case "forbidden":
		re = controlapi.Forbidden("%s", msg)
	case "not_found":
		re = controlapi.NotFound("%s", msg)
	case "conflict", "expired":
		re = controlapi.Conflict("%s", msg)
	default:
		re = controlapi.Errorf(controlapi.CodeUnavailable, "%s", msg)
	}
	// The JSON-RPC code is coarser than the questions code (expired and
	// conflict share one); the data keeps the precise one for clients.
	re.Data = api.QuestionErrorData{Code: qe.Code(), Reason: qe.Reason}
	return zero, re
}
