// Package auth holds Raven's credentials and principals (operator, device,
// captain), token verification, and the Take Control leases of control devices.
package auth

// Role is the kind of principal a credential authenticates.
type Role string

const (
	// RoleOperator is the owner: full authority.
	RoleOperator Role = "operator"
	// RoleDevice is an owner's device: read-only, or control (may take
	// control of a conversation through an explicit lease).
	RoleDevice Role = "device"
	// RoleCaptain is automation: may read, may never answer a question.
	RoleCaptain Role = "captain"
)

// Principal is the authenticated caller of one request. It is derived from
// the credential on every call, never from what a client displayed.
type Principal struct {
	// Name is the credential's unique name.
	Name string `json:"name"`
	Role Role   `json:"role"`
	// ReadOnly is set for read-only devices.
	ReadOnly bool `json:"read_only,omitempty"`
	// Generation increases on every rotation of the credential.
	Generation int `json:"generation"`
}

// IsOperator reports whether p is the owner.
func (p Principal) IsOperator() bool { return p.Role == RoleOperator }

// IsControlDevice reports whether p is a device allowed to take control.
func (p Principal) IsControlDevice() bool { return p.Role == RoleDevice && !p.ReadOnly }
