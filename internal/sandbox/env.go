package sandbox

import (
	"fmt"
	"strings"
)

// defaultEnvAllow are the only variables a command inherits: an allow-list,
// so a provider key under a name nobody thought of still stays out.
var defaultEnvAllow = []string{
	"PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "LC_COLLATE",
	"LC_NUMERIC", "LC_TIME", "TERM", "TZ", "USER", "LOGNAME", "NO_COLOR",
}

// DefaultPath is the command's PATH when the parent has none.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// LooksSecret reports whether an environment variable name is one a command
// must never see, even when an operator allow-lists it by mistake.
func LooksSecret(name string) bool {
	n := strings.ToUpper(name)
	switch {
	case strings.HasPrefix(n, "RAVEN_"),
		strings.HasSuffix(n, "_KEY"), strings.HasSuffix(n, "_TOKEN"),
		strings.HasSuffix(n, "_SECRET"), strings.Contains(n, "PASSWORD"),
		strings.Contains(n, "PASSWD"), strings.Contains(n, "CREDENTIAL"),
		strings.Contains(n, "API_KEY"), strings.Contains(n, "APIKEY"),
		strings.Contains(n, "TOKEN"), strings.Contains(n, "SECRET"):
		return true
	}
	return false
}

func checkEnvAllow(names []string) error {
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, "=\x00") {
			return fmt.Errorf("%w: env name %q", ErrPolicy, n)
		}
		if LooksSecret(n) {
			return fmt.Errorf("%w: env %q looks like a secret and is never passed to commands", ErrPolicy, n)
		}
	}
	return nil
}

// scrubEnv builds the command's environment from parent (os.Environ form):
// allowed names only, then the fixed HOME/TMPDIR/PWD/SHELL.
func scrubEnv(parent []string, allow []string, home, dir string) []string {
	ok := make(map[string]bool, len(allow))
	for _, n := range allow {
		ok[n] = !LooksSecret(n)
	}
	var out []string
	havePath := false
	for _, kv := range parent {
		name, _, found := strings.Cut(kv, "=")
		if !found || !ok[name] {
			continue
		}
		if name == "PATH" {
			havePath = true
		}
		out = append(out, kv)
	}
	if !havePath {
		out = append(out, "PATH="+DefaultPath)
	}
	return append(out, "HOME="+home, "TMPDIR="+home, "PWD="+dir, "SHELL=/bin/sh")
}
