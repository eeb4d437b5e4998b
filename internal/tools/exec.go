package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/sandbox"
)

// defaultDeny refuses obviously destructive commands early with a friendly
// message. It is not the boundary — the sandbox is; spelling tricks that get
// past these patterns still cannot touch anything outside the workspace.
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

// Unsandboxed policies: what exec does where no OS sandbox exists.
const (
	// UnsandboxedOff refuses every command (the default).
	UnsandboxedOff = "off"
	// UnsandboxedApprove runs a command unconfined only after the owner
	// approved that exact command.
	UnsandboxedApprove = "approve"
)

// Errors of the exec tool.
var (
	// ErrDenied is returned for a command on the deny-list.
	ErrDenied = errors.New("command refused by the exec deny-list")
	// ErrExecOff is returned when exec cannot run confined and the
	// config does not allow asking for unconfined runs.
	ErrExecOff = errors.New("exec is off")
	// ErrNeedsApproval is returned when a command needs more than the
	// sandbox grants and nobody can approve it.
	ErrNeedsApproval = errors.New("command needs the owner's approval")
	// ErrNotApproved wraps the approver's refusal (denied, expired).
	ErrNotApproved = errors.New("command not approved")
)

// Sandbox runs commands confined; *sandbox.Runner implements it.
type Sandbox interface {
	Mode() sandbox.Mode
	CheckGrant(path string) error
	Run(ctx context.Context, c sandbox.Command) (sandbox.Result, error)
}

// Approver asks the owner to let one exact command in one directory have
// grants beyond the sandbox, and waits for the answer; *approvals.Store
// implements it. remembered is true when an allow-always rule answered.
type Approver interface {
	Approve(ctx context.Context, command, dir string, grants []string, conversation string) (remembered bool, err error)
}

// Grant names, as the approvals contract spells them.
const (
	grantNetwork     = "network"
	grantUnsandboxed = "unsandboxed"
	grantPathPrefix  = "path:"
)

// ExecOptions configure the exec tool.
type ExecOptions struct {
	WS *Workspace
	// DataDir is kept invisible to commands; default the workspace's
	// parent, raven's layout.
	DataDir   string
	Timeout   time.Duration
	MaxOutput int
	// Deny adds patterns to the friendly early refusal.
	Deny []string
	// Sandbox runs the commands; nil builds one with sandbox.New.
	Sandbox Sandbox
	// Approver answers commands that need more than the sandbox grants;
	// nil refuses them.
	Approver Approver
	// AllowNetwork lets commands use the network without approval.
	AllowNetwork bool
	// Unsandboxed is UnsandboxedOff (default) or UnsandboxedApprove.
	Unsandboxed string
}

// ExecName is the exec tool's name.
const ExecName = "exec"

// Exec is the exec tool: run a shell command confined to the workspace.
// Its schema and argument checks are the embedded typed tool's.
type Exec struct {
	*Typed[execArgs]
	o    ExecOptions
	deny []*regexp.Regexp
}

// NewExec returns the exec tool with the default sandbox and no approver:
// the constructor the gateway has always called.
func NewExec(ws *Workspace, timeout time.Duration, maxOutput int, extraDeny []string) (*Exec, error) {
	return NewExecWith(ExecOptions{WS: ws, Timeout: timeout, MaxOutput: maxOutput, Deny: extraDeny})
}

// NewExecWith returns the exec tool. Where no sandbox exists the tool is
// still returned and refuses (or asks) per Unsandboxed; a layout that would
// expose the data dir is an error.
func NewExecWith(o ExecOptions) (*Exec, error) {
	if o.WS == nil {
		return nil, errors.New("tools: exec needs a workspace")
	}
	if o.DataDir == "" {
		o.DataDir = filepath.Dir(o.WS.Root())
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultExecTimeout
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultExecMaxOutput
	}
	switch o.Unsandboxed {
	case "":
		o.Unsandboxed = UnsandboxedOff
	case UnsandboxedOff, UnsandboxedApprove:
	default:
		return nil, fmt.Errorf("tools: exec unsandboxed policy %q: want %q or %q", o.Unsandboxed, UnsandboxedOff, UnsandboxedApprove)
	}
	if o.Sandbox == nil {
		r, err := sandbox.New(sandbox.Options{Workspace: o.WS.Root(), DataDir: o.DataDir})
		if err != nil && !errors.Is(err, sandbox.ErrUnavailable) {
			return nil, fmt.Errorf("tools: exec: %w", err)
		}
		o.Sandbox = r
	}
	e := &Exec{o: o}
	typed, err := New(ExecName, execDescription, e.run,
		Len("command", 1, 8192), Len("paths", 0, 8), Len("paths[]", 1, 4096))
	if err != nil {
		return nil, err
	}
	e.Typed = typed
	for _, p := range append(append([]string{}, defaultDeny...), o.Deny...) {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("tools: exec deny pattern %q: %w", p, err)
		}
		e.deny = append(e.deny, re)
	}
	return e, nil
}

// Mode is the sandbox mode commands run under.
func (e *Exec) Mode() sandbox.Mode { return e.o.Sandbox.Mode() }

// Name is the tool's name; it needs no built tool, so a reload can name
// the tool it turns off.
func (*Exec) Name() string { return ExecName }

const execDescription = "Run a shell command in the workspace directory, inside a sandbox: the workspace is writable, system " +
	"directories are read-only, nothing else is visible, the network is off. Set network=true or list paths " +
	"(absolute directories outside the workspace to write) only when the task needs them: the owner is asked to approve."

// WaitsForOwner: a command needing approval waits for the owner, bounded
// by the approval's expiry; the run itself is bounded by Timeout.
func (e *Exec) WaitsForOwner() bool { return e.o.Approver != nil }

type execArgs struct {
	Command string   `json:"command"`
	Network bool     `json:"network,omitempty"`
	Paths   []string `json:"paths,omitempty"`
}

// plan is what a command needs beyond the sandbox's defaults.
type plan struct {
	grants     []string
	network    bool
	paths      []string
	unconfined bool
}

func (e *Exec) plan(a execArgs) (plan, error) {
	mode := e.o.Sandbox.Mode()
	if !mode.Available() {
		if e.o.Unsandboxed != UnsandboxedApprove {
			return plan{}, fmt.Errorf("%w: no OS sandbox on this machine (%s), and tools.exec.unsandboxed is %q", ErrExecOff, mode, e.o.Unsandboxed)
		}
		return plan{grants: []string{grantUnsandboxed}, network: true, unconfined: true}, nil
	}
	var p plan
	switch {
	case a.Network && !e.o.AllowNetwork:
		p.grants, p.network = append(p.grants, grantNetwork), true
	case a.Network:
		p.network = true
	case !mode.ConfinesNetwork():
		// Network-off cannot be enforced here, so every command may
		// reach the network: the owner decides.
		p.grants, p.network = append(p.grants, grantNetwork), true
	}
	for _, raw := range a.Paths {
		if !filepath.IsAbs(raw) {
			return plan{}, fmt.Errorf("path %q must be absolute", raw)
		}
		if err := e.o.Sandbox.CheckGrant(raw); err != nil {
			return plan{}, fmt.Errorf("path %q can never be granted: %w", raw, err)
		}
		real, err := filepath.EvalSymlinks(raw)
		if err != nil {
			return plan{}, fmt.Errorf("path %q: %w", raw, err)
		}
		if real == e.o.WS.Root() || strings.HasPrefix(real, e.o.WS.Root()+string(filepath.Separator)) {
			continue // already writable
		}
		p.paths = append(p.paths, real)
		p.grants = append(p.grants, grantPathPrefix+real)
	}
	return p, nil
}

func (e *Exec) run(ctx context.Context, a execArgs) (string, error) {
	for _, re := range e.deny {
		if re.MatchString(a.Command) {
			return "", fmt.Errorf("%w: %q", ErrDenied, a.Command)
		}
	}
	p, err := e.plan(a)
	if err != nil {
		return "", err
	}
	dir := e.o.WS.Root()
	if len(p.grants) > 0 {
		if e.o.Approver == nil {
			return "", fmt.Errorf("%w (%s), and no approvals are configured: the command did not run", ErrNeedsApproval, strings.Join(p.grants, ", "))
		}
		turn, _ := TurnFrom(ctx)
		if _, err := e.o.Approver.Approve(ctx, a.Command, dir, p.grants, turn.Conversation); err != nil {
			return "", fmt.Errorf("%w (%s): %w; the command did not run", ErrNotApproved, strings.Join(p.grants, ", "), err)
		}
	}
	out := &capped{max: e.o.MaxOutput}
	res, err := e.o.Sandbox.Run(ctx, sandbox.Command{
		Command: a.Command, Dir: dir, Timeout: e.o.Timeout, Network: p.network,
		ReadWrite: p.paths, Unconfined: p.unconfined, Stdout: out, Stderr: out,
	})
	text := out.String()
	if err != nil {
		return text, fmt.Errorf("exec: %w", err)
	}
	var notes []string
	if res.Killed > 0 {
		notes = append(notes, fmt.Sprintf("[%d leftover process(es) killed when the command ended]", res.Killed))
	}
	switch {
	case res.TimedOut:
		return text, fmt.Errorf("command timed out after %s", e.o.Timeout)
	case res.Canceled:
		return text, fmt.Errorf("command canceled: %w", context.Cause(ctx))
	case res.ExitCode != 0:
		notes = append(notes, fmt.Sprintf("[exit status %d]", res.ExitCode))
	case res.Signal != "":
		notes = append(notes, "[killed by "+res.Signal+"]")
	}
	if text == "" && len(notes) == 0 {
		return "(no output)", nil
	}
	if len(notes) > 0 {
		text = strings.TrimRight(text, "\n") + "\n" + strings.Join(notes, "\n")
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
