package chat

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// readline installs one process-wide SIGWINCH watcher on first use and
	// never stops it; it is the library's, not a leak of ours.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/chzyer/readline.DefaultOnWidthChanged.func1.1"))
}
