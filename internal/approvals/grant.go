package approvals

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Grants a command can need beyond what the sandbox gives.
const (
	// GrantNetwork lets the command use the network.
	GrantNetwork = "network"
	// GrantUnsandboxed runs the command with no OS sandbox at all (only
	// where none is available and the config says approval-only).
	GrantUnsandboxed = "unsandboxed"
	// GrantPathPrefix + an absolute directory lets the command write there.
	GrantPathPrefix = "path:"
)

// Bounds of one request.
const (
	MaxCommandBytes = 8192
	MaxDirBytes     = 4096
	MaxGrants       = 16
)

// PathGrant is the grant for writing beneath dir (absolute, cleaned).
func PathGrant(dir string) string { return GrantPathPrefix + filepath.Clean(dir) }

// canonicalGrants validates grants and returns them sorted and deduplicated
// with their storage key, so an approval matches only this exact set.
func canonicalGrants(grants []string) ([]string, string, error) {
	if len(grants) == 0 || len(grants) > MaxGrants {
		return nil, "", fmt.Errorf("%w: want 1..%d grants, got %d", ErrInvalid, MaxGrants, len(grants))
	}
	out := make([]string, 0, len(grants))
	for _, g := range grants {
		switch {
		case g == GrantNetwork, g == GrantUnsandboxed:
		case strings.HasPrefix(g, GrantPathPrefix):
			p := strings.TrimPrefix(g, GrantPathPrefix)
			if !filepath.IsAbs(p) || filepath.Clean(p) != p || len(p) > MaxDirBytes || strings.ContainsRune(p, 0) {
				return nil, "", fmt.Errorf("%w: grant %q needs an absolute clean path", ErrInvalid, g)
			}
		default:
			return nil, "", fmt.Errorf("%w: unknown grant %q", ErrInvalid, g)
		}
		out = append(out, g)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	key, err := json.Marshal(out)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return out, string(key), nil
}
