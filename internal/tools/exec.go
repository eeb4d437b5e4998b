package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"time"
)

// defaultDeny refuses commands that destroy data or the machine. It is a
// seatbelt against a confused model, not a sandbox.
var defaultDeny = []string{
	`\brm\s+(-[a-zA-Z]*[rf][a-zA-Z]*\s+)+(/|~|\$HOME|\*)(\s|$)`,
	`\bmkfs(\.\w+)?\b`,
	`\bdd\b.*\bof=/dev/`,
	`>\s*/dev/(sd|nvme|hd|vd)`,
	`\b(shutdown|reboot|halt|poweroff)\b`,
	`:\(\)\s*\{\s*:\|:&\s*\};:`,
	`\bchmod\s+-R\s+0?777\s+/(\s|$)`,
	`\bchown\s+-R\s+\S+\s+/(\s|$)`,
	`\bgit\s+push\s+.*--force\b`,
}

// Exec is the exec tool: run a shell command in the workspace.
type Exec struct {
	WS        *Workspace
	Timeout   time.Duration
	MaxOutput int
	deny      []*regexp.Regexp
}

// NewExec returns the exec tool with the built-in deny-list plus extra patterns.
// A zero timeout or maxOutput takes DefaultExecTimeout or DefaultExecMaxOutput.
func NewExec(ws *Workspace, timeout time.Duration, maxOutput int, extraDeny []string) (*Exec, error) {
	if timeout <= 0 {
		timeout = DefaultExecTimeout
	}
	if maxOutput <= 0 {
		maxOutput = DefaultExecMaxOutput
	}
	e := &Exec{WS: ws, Timeout: timeout, MaxOutput: maxOutput}
	for _, p := range append(append([]string{}, defaultDeny...), extraDeny...) {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("tools: exec deny pattern %q: %w", p, err)
		}
		e.deny = append(e.deny, re)
	}
	return e, nil
}

func (*Exec) Name() string { return "exec" }
func (*Exec) Description() string {
	return "Run a shell command in the workspace directory. Output is capped; destructive commands are refused."
}
func (*Exec) Parameters() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": []string{"command"},
		"properties": map[string]any{"command": map[string]any{"type": "string", "minLength": 1, "maxLength": 8192}}}
}

// ErrDenied is returned for a command on the deny-list.
var ErrDenied = errors.New("command refused by the exec deny-list")

func (e *Exec) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct{ Command string }
	if err := decodeArgs(raw, &a); err != nil {
		return "", err
	}
	for _, re := range e.deny {
		if re.MatchString(a.Command) {
			return "", fmt.Errorf("%w: %q", ErrDenied, a.Command)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, e.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", a.Command)
	cmd.Dir = e.WS.Root()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Kill the whole process group, not just the shell, on timeout.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	out := &capped{max: e.MaxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	text := out.String()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return text, fmt.Errorf("command timed out after %s", e.Timeout)
	case err != nil:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Sprintf("%s\n[exit status %d]", text, ee.ExitCode()), nil
		}
		return text, fmt.Errorf("exec: %w", err)
	}
	if text == "" {
		text = "(no output)"
	}
	return text, nil
}

// capped is a concurrency-safe buffer that keeps the first max bytes.
type capped struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	max       int
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.buf.Len(); room < len(p) {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.truncated = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.truncated {
		return c.buf.String() + fmt.Sprintf("\n[output truncated at %d bytes]", c.max)
	}
	return c.buf.String()
}
