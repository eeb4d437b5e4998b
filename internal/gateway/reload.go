package gateway

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/raven-agent/raven/internal/config"
)

// DefaultConfigPoll is how often a running gateway looks at config.json.
// A stat every 2 s costs nothing and needs no inotify dependency; SIGHUP
// (DaemonOptions.Reload) reloads at once.
const DefaultConfigPoll = 2 * time.Second

// reloadState is what the last config reload left, for gateway.status.
type reloadState struct {
	mu        sync.Mutex
	appliedAt time.Time
	// restartNeeded are keys changed in the file since start that only a
	// restart applies.
	restartNeeded []string
	// refused is why the last reload was refused ("" when it was not).
	refused string
	// done is closed and replaced after each reload attempt (tests wait on it).
	done chan struct{}
}

// attempted returns a channel closed by the next reload attempt.
func (s *reloadState) attempted() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = make(chan struct{})
	}
	return s.done
}

// finish records one attempt's outcome and wakes its waiters.
func (s *reloadState) finish(update func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	update()
	if s.done != nil {
		close(s.done)
	}
	s.done = make(chan struct{})
}

func (s *reloadState) snapshot() (time.Time, []string, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appliedAt, slices.Clone(s.restartNeeded), s.refused
}

// fileStamp identifies one version of a file without reading it: an
// editor's rename (new inode), a rewrite in place (size, mtime) or a
// removal all change it.
type fileStamp struct {
	exists bool
	mod    time.Time
	size   int64
	ino    uint64
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	s := fileStamp{exists: true, mod: fi.ModTime(), size: fi.Size()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
	}
	return s
}

// watchConfig reloads config.json when its stamp changes (checked every
// poll on the runtime's clock) or when reload fires, until ctx ends.
// last is the stamp of the file the running config came from, taken
// before watchConfig's goroutine starts so an edit racing the start is
// still seen as a change.
func (g *Gateway) watchConfig(ctx context.Context, last fileStamp, poll time.Duration, reload <-chan struct{}, overlay func(*config.Config) error) error {
	path := g.rt.Paths().Config()
	clk := g.rt.Clock()
	for {
		t := clk.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-reload:
			t.Stop()
			last = stampOf(path)
			g.reloadConfig("signal", overlay)
		case <-t.C():
			if s := stampOf(path); s != last {
				last = s
				g.reloadConfig("file changed", overlay)
			}
		}
	}
}

// reloadConfig loads config.json and applies it. A file that does not load
// or validate is refused whole, naming the dotted key, and the config in
// effect stays.
func (g *Gateway) reloadConfig(trigger string, overlay func(*config.Config) error) {
	log := g.rt.Logger().With("component", "config", "trigger", trigger)
	path := g.rt.Paths().Config()
	next, err := config.Load(path)
	if err == nil && overlay != nil {
		err = overlay(&next)
	}
	if err != nil {
		key := ""
		var ce *config.Error
		if errors.As(err, &ce) {
			key = ce.Key
		}
		log.Error("config reload refused; the config in effect stays", "file", path, "key", key, "err", err)
		g.reload.finish(func() { g.reload.refused = err.Error() })
		return
	}
	res, err := g.rt.Reconfigure(next)
	if err != nil {
		log.Error("config reload failed; the config in effect stays", "file", path, "err", err)
		g.reload.finish(func() { g.reload.refused = err.Error() })
		return
	}
	g.reload.finish(func() {
		g.reload.appliedAt, g.reload.restartNeeded, g.reload.refused = g.rt.Clock().Now(), res.RestartNeeded, ""
	})
	log.Info("config reloaded", "file", path, "applied", res.Applied, "restart_needed", res.RestartNeeded)
}
