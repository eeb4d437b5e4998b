package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/raven-agent/raven/internal/statefile"
)

// OperatorName is the name of the local operator credential made at onboard.
const OperatorName = "operator"

// EnsureOperatorToken makes sure the local operator credential exists and
// that path (config.Paths.OperatorToken()) holds a working token for it,
// written atomically with mode 0600. A file whose token still verifies is
// left alone; otherwise the credential is created (or rotated, or re-created
// after a revoke) and the file rewritten. It reports whether it wrote.
func (s *Store) EnsureOperatorToken(ctx context.Context, path string) (bool, error) {
	if tok, err := ReadTokenFile(path); err == nil {
		if p, err := s.Verify(ctx, tok); err == nil && p.IsOperator() {
			return false, nil
		}
	}
	tok, err := s.Create(ctx, RoleOperator, OperatorName, false)
	if errors.Is(err, ErrExists) {
		tok, err = s.Rotate(ctx, OperatorName)
	}
	if err != nil {
		return false, fmt.Errorf("auth: operator token: %w", err)
	}
	if err := statefile.WriteAtomic(path, []byte(tok+"\n"), 0o600); err != nil {
		return false, fmt.Errorf("auth: write operator token %s: %w", path, err)
	}
	return true, nil
}

// ReadTokenFile reads a token file. It refuses a file that group or others
// can read, as ssh does for private keys: the token is the operator's full
// authority.
func ReadTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("auth: token file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("auth: token file: %w", err)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("auth: token file %s has mode %04o; want 0600 (chmod 600 %s)", path, st.Mode().Perm(), path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenLen+2))
	if err != nil {
		return "", fmt.Errorf("auth: token file %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(b))
	if !wellFormed(tok) {
		return "", fmt.Errorf("auth: token file %s: not a Raven token", path)
	}
	return tok, nil
}
