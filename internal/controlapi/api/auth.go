package api

// Credential changes served by a running gateway (operator only), so the
// change happens in the process whose auth store carries the questions'
// OnCredentialChange hook and whose event log pushes to live subscribers.
const (
	// AuthRevoke revokes a credential; questions it owns are cancelled at once.
	AuthRevoke Method[AuthNameParams, AuthRevokeResult] = "auth.revoke"
	// AuthRotate replaces a credential's token; the result carries the new
	// token, shown once.
	AuthRotate Method[AuthNameParams, AuthRotateResult] = "auth.rotate"
)

// AuthNameParams name one credential.
type AuthNameParams struct {
	Name string `json:"name"`
}

// AuthRevokeResult is auth.revoke's result.
type AuthRevokeResult struct {
	Name    string `json:"name"`
	Revoked bool   `json:"revoked"`
}

// AuthRotateResult is auth.rotate's result.
type AuthRotateResult struct {
	Name  string `json:"name"`
	Token string `json:"token"`
}
