package sandbox

import "time"

// Fds the runner hands the supervisor (after stdin, stdout, stderr).
const (
	specFD   = 3
	statusFD = 4
	// maxSpecBytes bounds what the supervisor reads from its spec pipe.
	maxSpecBytes = 1 << 20
)

// supervisorMarker is set in the supervisor's environment (not the
// command's) so sandbox.New refuses to nest.
const supervisorMarker = "RAVEN_SANDBOX_SUPERVISOR"

// spec is what the supervisor is told to run and under which rules. It
// travels over a pipe, never argv or the environment, so it stays out of
// /proc/PID/cmdline.
type spec struct {
	Command string   `json:"command"`
	Dir     string   `json:"dir"`
	Env     []string `json:"env"`
	// ReadWrite and ReadOnly are the only hierarchies the command sees.
	ReadWrite []string `json:"rw"`
	ReadOnly  []string `json:"ro"`
	// Devices are device files opened read-write (/dev/null and friends).
	Devices []string `json:"dev"`
	Network bool     `json:"network"`
	// ABI is the Landlock ABI the runner detected.
	ABI int `json:"abi"`
	// Unconfined skips confinement (approved where no sandbox exists).
	Unconfined bool          `json:"unconfined,omitempty"`
	Timeout    time.Duration `json:"timeout"`
}

// status is the supervisor's report, written once to the status pipe.
type status struct {
	// Started is false when the sandbox could not be applied: the command
	// never ran.
	Started  bool   `json:"started"`
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Canceled bool   `json:"canceled,omitempty"`
	// Killed counts descendants still alive after the command ended,
	// which the supervisor killed.
	Killed int    `json:"killed,omitempty"`
	Err    string `json:"err,omitempty"`
}
