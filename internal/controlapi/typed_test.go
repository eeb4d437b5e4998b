package controlapi

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/raven-agent/raven/internal/controlapi/api"
)

type echoParams struct {
	Word  string `json:"word"`
	Times int    `json:"times,omitempty"`
}

type echoResult struct {
	Said []string `json:"said"`
}

const echo api.Method[echoParams, echoResult] = "test.echo"

const heard api.Notification[echoResult] = "test.heard"

// A typed handler gets its params decoded strictly and typed, the typed
// client gets its result decoded, and the access the contract registered
// holds; notifications decode into their declared payload.
func TestTypedHandleAndInvoke(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	Handle(e.srv, echo, Control, func(_ context.Context, call *Call, p echoParams) (echoResult, error) {
		var r echoResult
		for range max(p.Times, 1) {
			r.Said = append(r.Said, p.Word)
		}
		return r, Notify(call.Notifier(), heard, r)
	})
	op := e.dial("op")
	tests := []struct {
		name   string
		client *Client
		params any
		want   int // RPC error code, 0 for success
	}{
		{"typed params", op, echoParams{Word: "hi", Times: 2}, 0},
		{"unknown field refused", op, map[string]any{"word": "hi", "loud": true}, CodeInvalidParams},
		{"wrong type refused", op, map[string]any{"word": 3}, CodeInvalidParams},
		{"access from the contract's registration", e.dial("tablet"), echoParams{Word: "hi"}, CodeForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.client.Call(ctx, echo.Name(), tt.params, nil)
			if code(err) != tt.want {
				t.Fatalf("err = %v, want code %d", err, tt.want)
			}
		})
	}
	res, err := Invoke(ctx, op, echo, echoParams{Word: "caw", Times: 3})
	if err != nil || len(res.Said) != 3 || res.Said[2] != "caw" {
		t.Fatalf("Invoke = %+v, %v", res, err)
	}
	for n := range op.Notifications() {
		got, ok, err := DecodeNotification(n, heard)
		if err != nil {
			t.Fatal(err)
		}
		if ok && len(got.Said) == 3 {
			break
		}
	}
	if _, ok, _ := DecodeNotification(Notification{Method: "other", Params: json.RawMessage(`{}`)}, heard); ok {
		t.Fatal("another notification decoded as test.heard")
	}
	if _, ok, err := DecodeNotification(Notification{Method: heard.Name(), Params: json.RawMessage(`{"said":1}`)}, heard); !ok || err == nil {
		t.Fatalf("malformed payload: ok=%v err=%v", ok, err)
	}
}
