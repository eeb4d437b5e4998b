package gateway

import (
	"context"
	"fmt"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
)

// credentialStore is what auth.revoke and auth.rotate need of the
// runtime's auth store: the very store whose OnCredentialChange hook
// cancels the owner questions, so their input_resolved events reach this
// gateway's subscribers at once.
type credentialStore interface {
	Revoke(ctx context.Context, name string) error
	Rotate(ctx context.Context, name string) (string, error)
}

// RegisterAuth serves the operator's credential changes.
func RegisterAuth(s *controlapi.Server, st credentialStore) {
	controlapi.Handle(s, api.AuthRevoke, controlapi.Operator,
		func(ctx context.Context, c *controlapi.Call, in api.AuthNameParams) (api.AuthRevokeResult, error) {
			if err := st.Revoke(ctx, in.Name); err != nil {
				return api.AuthRevokeResult{}, fmt.Errorf("auth.revoke %q: %w", in.Name, err)
			}
			return api.AuthRevokeResult{Name: in.Name, Revoked: true}, nil
		})
	controlapi.Handle(s, api.AuthRotate, controlapi.Operator,
		func(ctx context.Context, c *controlapi.Call, in api.AuthNameParams) (api.AuthRotateResult, error) {
			tok, err := st.Rotate(ctx, in.Name)
			if err != nil {
				return api.AuthRotateResult{}, fmt.Errorf("auth.rotate %q: %w", in.Name, err)
			}
			return api.AuthRotateResult{Name: in.Name, Token: tok}, nil
		})
}

var _ credentialStore = (*auth.Store)(nil)
