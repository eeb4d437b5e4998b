package sentinel

// Paths are the files a Sentinel reads and writes. The data directory's
// layout is config.Paths's; config.Paths.SentinelPaths fills this, so the
// Sentinel does not import config (which composes its section).
type Paths struct {
	// State is the statefile the policy, injector and defer manager share.
	State            string
	Feedback         string
	Preferences      string
	PendingDecisions string
	TickLog          string
	// Routines keeps the learned routines between ticks and restarts.
	Routines string
	// Memory, History, Attention and Behaviors are the workspace files the
	// assembler and producers read (and attention.md / behaviors.md write).
	Memory    string
	History   string
	Attention string
	Behaviors string
}
