package questions

import (
	"context"
	"fmt"

	"github.com/raven-agent/raven/internal/auth"
)

// Controllers reports the Take Control lease holder of a conversation.
// internal/auth implements it; an expired lease must report ok=false.
type Controllers interface {
	ActiveController(ctx context.Context, conversation string) (name string, ok bool)
}

// Credentials reports the current state of a named credential, so a rotated
// or revoked credential loses authority on its next use even if a client
// still holds a principal derived from it.
type Credentials interface {
	CredentialGeneration(ctx context.Context, name string) (generation int, active bool, err error)
}

// Authority decides who may answer or cancel a question. It is re-evaluated
// on every call, never inferred from what a client displayed.
type Authority struct {
	Controllers Controllers // nil: no device can hold control
	Credentials Credentials // nil: trust the principal as authenticated
}

// CanAnswer returns nil when p may answer (or cancel) a question of conv:
// the operator, or the control device currently holding conv's Take Control
// lease. A captain, a read-only device, and anything else never may.
func (a Authority) CanAnswer(ctx context.Context, p auth.Principal, conv string) error {
	if err := a.current(ctx, p); err != nil {
		return err
	}
	switch {
	case p.ReadOnly:
		return newErr(CodeForbidden, "read_only", "%s is read-only", p.Name)
	case p.Role == auth.RoleOperator:
		return nil
	case p.Role == auth.RoleCaptain:
		return newErr(CodeForbidden, "captain", "a captain credential may read but never answer")
	case p.IsControlDevice():
		if a.Controllers == nil {
			return newErr(CodeForbidden, "not_controller", "device %s does not hold control of %s", p.Name, conv)
		}
		name, ok := a.Controllers.ActiveController(ctx, conv)
		if !ok || name != p.Name {
			return newErr(CodeForbidden, "not_controller", "device %s does not hold control of %s", p.Name, conv)
		}
		return nil
	}
	return newErr(CodeForbidden, "role", "principal %q with role %q may not answer", p.Name, p.Role)
}

// CanRead returns nil when p may read question snapshots: any authenticated
// principal whose credential is still current.
func (a Authority) CanRead(ctx context.Context, p auth.Principal) error {
	if err := a.current(ctx, p); err != nil {
		return err
	}
	switch p.Role {
	case auth.RoleOperator, auth.RoleDevice, auth.RoleCaptain:
		return nil
	}
	return newErr(CodeForbidden, "role", "principal %q with role %q may not read", p.Name, p.Role)
}

func (a Authority) current(ctx context.Context, p auth.Principal) error {
	if p.Name == "" {
		return newErr(CodeForbidden, "unauthenticated", "no authenticated principal")
	}
	if a.Credentials == nil {
		return nil
	}
	gen, active, err := a.Credentials.CredentialGeneration(ctx, p.Name)
	if err != nil {
		return fmt.Errorf("questions: check credential %s: %w", p.Name, err)
	}
	if !active {
		return newErr(CodeForbidden, "revoked", "credential %s is revoked", p.Name)
	}
	if gen != p.Generation {
		return newErr(CodeForbidden, "rotated", "credential %s was rotated", p.Name)
	}
	return nil
}
