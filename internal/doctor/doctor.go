// Package doctor checks a Raven installation — data dir, config, model
// reachability, lock files, database — and says what to fix.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/sandbox"
	"github.com/raven-agent/raven/internal/sqlitedb"
	"github.com/raven-agent/raven/internal/statefile"
)

// Status is a check's outcome.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Check is one finding.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Options are the doctor's inputs.
type Options struct {
	Paths  config.Paths
	Config config.Config
	// ConfigErr is the error loading config.json, if any.
	ConfigErr error
	// HTTP is used for the model reachability probe.
	HTTP *http.Client
	// ModelEndpoint returns the URL to probe for the configured model ("" to skip).
	ModelEndpoint func(cfg config.Config) (url string, header http.Header)
	// Sandbox probes the exec sandbox (default sandbox.Detect).
	Sandbox func() sandbox.Mode
	// MCP starts each configured MCP server once (nil: not checked).
	MCP MCPServers
}

// Run performs every check.
func Run(ctx context.Context, o Options) []Check {
	var out []Check
	out = append(out, dataDir(o.Paths))
	out = append(out, configFile(o))
	out = append(out, model(ctx, o))
	out = append(out, database(ctx, o.Paths))
	out = append(out, locks(ctx, o.Paths)...)
	out = append(out, corrupt(o.Paths))
	out = append(out, socketPath(o.Paths))
	out = append(out, operatorToken(o.Paths))
	out = append(out, sandboxMode(o))
	out = append(out, silentSpend(ctx, o.Paths, time.Now()))
	out = append(out, mcpServers(ctx, o)...)
	return out
}

// configFile reports the config file; a missing one is not "ok": it says
// the defaults apply, so an owner who thinks they configured something
// learns the file is not where Raven looks.
func configFile(o Options) Check {
	path := o.Paths.Config()
	if o.ConfigErr != nil {
		return Check{Name: "config", Status: Fail, Detail: o.ConfigErr.Error(), Fix: "edit " + path + " (raven config set KEY VALUE validates as it writes)"}
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Check{Name: "config", Status: Warn, Detail: path + " is missing; every key has its default (raven config list shows them)",
			Fix: "run raven onboard, or raven config set KEY VALUE to create it"}
	case err != nil:
		return Check{Name: "config", Status: Fail, Detail: err.Error()}
	case st.IsDir():
		return Check{Name: "config", Status: Fail, Detail: path + " is a directory", Fix: "move it aside and run raven onboard"}
	}
	return Check{Name: "config", Status: OK, Detail: path}
}

// dataDir checks the data directory without creating it: the doctor
// reports what is missing, it never makes it.
func dataDir(p config.Paths) Check {
	st, err := os.Stat(p.Root)
	if errors.Is(err, os.ErrNotExist) {
		return Check{Name: "data dir", Status: Fail, Detail: p.Root + " does not exist", Fix: "run raven onboard"}
	}
	if err != nil {
		return Check{Name: "data dir", Status: Fail, Detail: err.Error(), Fix: "run raven onboard"}
	}
	if !st.IsDir() {
		return Check{Name: "data dir", Status: Fail, Detail: p.Root + " is not a directory"}
	}
	probe := filepath.Join(p.Root, ".doctor-probe")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		return Check{Name: "data dir", Status: Fail, Detail: "not writable: " + err.Error(), Fix: "fix the permissions of " + p.Root}
	}
	os.Remove(probe)
	if st.Mode().Perm()&0o077 != 0 {
		return Check{Name: "data dir", Status: Warn, Detail: fmt.Sprintf("%s is readable by others (%v)", p.Root, st.Mode().Perm()), Fix: "chmod 700 " + p.Root}
	}
	return Check{Name: "data dir", Status: OK, Detail: p.Root}
}

func model(ctx context.Context, o Options) Check {
	if o.Config.Model == "" {
		return Check{Name: "model", Status: Warn, Detail: "no model configured; chat explains how, proactive features that need a model skip",
			Fix: "raven config set model ollama/qwen2.5:7b (or openai/gpt-4o-mini, anthropic/claude-sonnet-4-5)"}
	}
	if path, ok := strings.CutPrefix(o.Config.Model, "scripted:"); ok {
		if _, err := os.Stat(path); err != nil {
			return Check{Name: "model", Status: Fail, Detail: err.Error()}
		}
		return Check{Name: "model", Status: OK, Detail: o.Config.Model + " (scripted replay)"}
	}
	if o.ModelEndpoint == nil {
		return Check{Name: "model", Status: OK, Detail: o.Config.Model + " (not probed)"}
	}
	url, hdr := o.ModelEndpoint(o.Config)
	if url == "" {
		return Check{Name: "model", Status: OK, Detail: o.Config.Model + " (not probed)"}
	}
	client := o.HTTP
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Check{Name: "model", Status: Fail, Detail: err.Error()}
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return Check{Name: "model", Status: Fail, Detail: fmt.Sprintf("%s: cannot reach %s: %v", o.Config.Model, url, err),
			Fix: "start the model server (ollama serve) or check the base URL and network"}
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return Check{Name: "model", Status: Fail, Detail: fmt.Sprintf("%s: %s answered %d", o.Config.Model, url, resp.StatusCode), Fix: "check the API key (OPENAI_API_KEY / ANTHROPIC_API_KEY)"}
	case resp.StatusCode >= 400:
		return Check{Name: "model", Status: Warn, Detail: fmt.Sprintf("%s: %s answered %d", o.Config.Model, url, resp.StatusCode)}
	}
	return Check{Name: "model", Status: OK, Detail: fmt.Sprintf("%s reachable at %s", o.Config.Model, url)}
}

// database inspects raven.db without changing it; moving a damaged one
// aside is the next start's job (sqlitedb.Open).
func database(ctx context.Context, p config.Paths) Check {
	err := sqlitedb.Check(ctx, p.DB())
	var ce *sqlitedb.CorruptError
	switch {
	case err == nil:
		return Check{Name: "database", Status: OK, Detail: p.DB() + " (integrity ok)"}
	case errors.Is(err, os.ErrNotExist):
		return Check{Name: "database", Status: Warn, Detail: "raven.db not created yet", Fix: "run raven onboard"}
	case errors.As(err, &ce) && ce.Earlier != "":
		return Check{Name: "database", Status: Fail, Detail: err.Error(),
			Fix: "restore a backup to " + p.DB() + ", or delete " + ce.Earlier + " to start over with an empty database (devices must pair again)"}
	case errors.As(err, &ce):
		return Check{Name: "database", Status: Fail, Detail: err.Error(),
			Fix: "stop raven and restore " + p.DB() + " from a backup; the next start moves the damaged file aside and refuses to run on an empty one"}
	}
	return Check{Name: "database", Status: Fail, Detail: err.Error()}
}

// maxSocketPath is the longest unix socket path connect(2) takes: sun_path
// is 108 bytes, one of them the terminating NUL.
const maxSocketPath = 107

func socketPath(p config.Paths) Check {
	sock := p.Socket()
	if n := len(sock); n > maxSocketPath {
		return Check{Name: "socket", Status: Fail,
			Detail: fmt.Sprintf("%s is %d bytes; a unix socket path has at most %d (sun_path is 108 bytes): the gateway cannot listen and clients cannot connect", sock, n, maxSocketPath),
			Fix:    fmt.Sprintf("use a data dir at most %d bytes long (RAVEN_HOME or --data-dir), e.g. move it or symlink it from a short path like ~/.raven", maxSocketPath-len("/raven.sock"))}
	}
	return Check{Name: "socket", Status: OK, Detail: sock}
}

// operatorToken fails on a token others can read: it grants full control.
func operatorToken(p config.Paths) Check {
	path := p.OperatorToken()
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return Check{Name: "operator token", Status: Warn, Detail: "missing", Fix: "run raven onboard"}
	case err != nil:
		return Check{Name: "operator token", Status: Fail, Detail: err.Error()}
	case !st.Mode().IsRegular():
		return Check{Name: "operator token", Status: Fail, Detail: path + " is not a regular file", Fix: "remove it and run raven onboard"}
	case st.Mode().Perm()&0o077 != 0:
		return Check{Name: "operator token", Status: Fail,
			Detail: fmt.Sprintf("%s is readable by other users (mode %04o, want 0600): anyone who reads it controls raven", path, st.Mode().Perm()),
			Fix:    "chmod 600 " + path + " (and rotate it if others may have read it)"}
	}
	return Check{Name: "operator token", Status: OK, Detail: path}
}

// locks verifies no lock is stuck: flock locks vanish with their holder, so
// a lock that cannot be taken belongs to a live process.
func locks(ctx context.Context, p config.Paths) []Check {
	var out []Check
	for _, l := range []struct{ name, path string }{
		{"cron lock", p.CronJobs() + ".lock"},
		{"sentinel state lock", p.SentinelState() + ".lock"},
	} {
		if _, err := os.Stat(l.path); err != nil {
			out = append(out, Check{Name: l.name, Status: OK, Detail: "not created yet"})
			continue
		}
		lk := statefile.NewLock(l.path)
		lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := lk.Acquire(lctx)
		cancel()
		if err != nil {
			out = append(out, Check{Name: l.name, Status: Warn, Detail: fmt.Sprintf("%s held for over 2s: %v", l.path, err), Fix: "a process is stuck holding it; find it with: fuser " + l.path})
			continue
		}
		lk.Release()
		out = append(out, Check{Name: l.name, Status: OK, Detail: l.path + " free"})
	}
	// Held would create the lock file and its directory: with no
	// file, no gateway ever ran here.
	if _, err := os.Stat(p.GatewayLock()); err != nil {
		out = append(out, Check{Name: "gateway", Status: OK, Detail: "not running"})
		return out
	}
	if held, err := statefile.NewLock(p.GatewayLock()).Held(); err == nil && !held {
		out = append(out, Check{Name: "gateway", Status: OK, Detail: "not running"})
	} else {
		pid, _ := os.ReadFile(p.GatewayLock())
		out = append(out, Check{Name: "gateway", Status: OK, Detail: "running (pid " + strings.TrimSpace(string(pid)) + ")"})
	}
	return out
}

func corrupt(p config.Paths) Check {
	var found []string
	for _, dir := range []string{p.Root, p.SentinelDir(), p.CronDir()} {
		m, _ := filepath.Glob(filepath.Join(dir, "*.corrupt-*"))
		found = append(found, m...)
	}
	if len(found) > 0 {
		return Check{Name: "corrupt files", Status: Warn, Detail: "moved aside: " + strings.Join(found, ", "),
			Fix: "inspect them, recover what you need, then delete them"}
	}
	return Check{Name: "corrupt files", Status: OK, Detail: "none"}
}
