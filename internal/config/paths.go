package config

import (
	"fmt"
	"os"
	"path/filepath"
)

// Paths is the layout of a Raven data directory (DESIGN.md §3).
type Paths struct {
	Root string
}

// DefaultDataDir returns $RAVEN_HOME or ~/.raven.
func DefaultDataDir() string {
	if d := os.Getenv("RAVEN_HOME"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".raven"
	}
	return filepath.Join(home, ".raven")
}

// NewPaths returns the layout rooted at dir (made absolute).
func NewPaths(dir string) (Paths, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Paths{}, fmt.Errorf("config: data dir %q: %w", dir, err)
	}
	return Paths{Root: abs}, nil
}

func (p Paths) Config() string        { return filepath.Join(p.Root, "config.json") }
func (p Paths) Workspace() string     { return filepath.Join(p.Root, "workspace") }
func (p Paths) Memory() string        { return filepath.Join(p.Workspace(), "MEMORY.md") }
func (p Paths) Heartbeat() string     { return filepath.Join(p.Workspace(), "HEARTBEAT.md") }
func (p Paths) History() string       { return filepath.Join(p.Workspace(), "memory", "HISTORY.md") }
func (p Paths) UserMemory() string    { return filepath.Join(p.Workspace(), "user_memory") }
func (p Paths) Attention() string     { return filepath.Join(p.UserMemory(), "attention.md") }
func (p Paths) Behaviors() string     { return filepath.Join(p.UserMemory(), "behaviors.md") }
func (p Paths) SentinelDir() string   { return filepath.Join(p.Root, "sentinel") }
func (p Paths) SentinelState() string { return filepath.Join(p.SentinelDir(), "state.json") }
func (p Paths) Feedback() string      { return filepath.Join(p.SentinelDir(), "feedback.jsonl") }
func (p Paths) Preferences() string   { return filepath.Join(p.SentinelDir(), "preferences.json") }
func (p Paths) PendingDecisions() string {
	return filepath.Join(p.SentinelDir(), "pending_decisions.json")
}
func (p Paths) Triggers() string    { return filepath.Join(p.SentinelDir(), "triggers.json") }
func (p Paths) TickLog() string     { return filepath.Join(p.SentinelDir(), "ticks.jsonl") }
func (p Paths) Routines() string    { return filepath.Join(p.SentinelDir(), "routines.json") }
func (p Paths) CronDir() string     { return filepath.Join(p.Root, "cron") }
func (p Paths) CronJobs() string    { return filepath.Join(p.CronDir(), "jobs.json") }
func (p Paths) CronRuns() string    { return filepath.Join(p.CronDir(), "runs.jsonl") }
func (p Paths) DB() string          { return filepath.Join(p.Root, "raven.db") }
func (p Paths) Socket() string      { return filepath.Join(p.Root, "raven.sock") }
func (p Paths) GatewayLock() string { return filepath.Join(p.Root, "gateway.lock") }
func (p Paths) OperatorToken() string {
	return filepath.Join(p.Root, "operator.token")
}

// WebhookSeen is the webhook channel's replay-state file: signatures seen
// inside the replay window, kept across restarts.
func (p Paths) WebhookSeen(name string) string {
	return filepath.Join(p.Root, "channels", "webhook-"+name+".seen")
}
func (p Paths) ChatHistory() string { return filepath.Join(p.Root, "chat_history") }

// StateDirs lists the directories Raven rewrites files in atomically, for
// the start-up sweep of interrupted writes' temp files.
func (p Paths) StateDirs() []string {
	return []string{p.Root, p.SentinelDir(), p.CronDir(), p.Workspace(), p.UserMemory(), filepath.Dir(p.History())}
}
