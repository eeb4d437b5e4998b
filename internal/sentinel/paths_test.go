package sentinel

import "path/filepath"

// testPaths lays a Sentinel's files out under root as a data directory
// does (config.Paths.SentinelPaths, which this package cannot import), so
// the tests' workspace files sit where the owner's would.
func testPaths(root string) Paths {
	ws := filepath.Join(root, "workspace")
	um := filepath.Join(ws, "user_memory")
	sd := filepath.Join(root, "sentinel")
	return Paths{
		State: filepath.Join(sd, "state.json"), Feedback: filepath.Join(sd, "feedback.jsonl"),
		Preferences: filepath.Join(sd, "preferences.json"), PendingDecisions: filepath.Join(sd, "pending_decisions.json"),
		TickLog: filepath.Join(sd, "ticks.jsonl"),
		Memory:  filepath.Join(ws, "MEMORY.md"), History: filepath.Join(ws, "memory", "HISTORY.md"),
		Attention: filepath.Join(um, "attention.md"), Behaviors: filepath.Join(um, "behaviors.md"),
	}
}
