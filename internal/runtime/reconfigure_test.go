package runtime

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/llm"
)

// Reconfigure applies each live key where it is used and reports every
// other changed key as needing a restart, relative to the start-up config.
func TestReconfigure(t *testing.T) {
	level := new(slog.LevelVar)
	rt, _ := newApp(t, false, llm.NewScripted(nil), func(o *Options) { o.LogLevel = level })
	start := rt.Config()
	tests := []struct {
		name    string
		change  func(c *config.Config)
		applied []string
		restart []string
		check   func(t *testing.T)
	}{
		{"live keys", func(c *config.Config) {
			c.Heartbeat.Interval = config.Duration(45 * time.Minute)
			c.Channels.Forward = []string{"telegram:42"}
			c.Log.Level = "debug"
		}, []string{"heartbeat.interval", "channels.forward", "log.level"}, nil, func(t *testing.T) {
			if rt.Heartbeat().Interval() != 45*time.Minute || level.Level() != slog.LevelDebug ||
				!slices.Equal(rt.Config().Channels.Forward, []string{"telegram:42"}) {
				t.Fatalf("not in effect: interval %s, level %s, forward %v", rt.Heartbeat().Interval(), level.Level(), rt.Config().Channels.Forward)
			}
		}},
		{"exec turned off", func(c *config.Config) { c.Tools.Exec.Enabled = false }, []string{"tools.exec.enabled"}, nil, func(t *testing.T) {
			if _, ok := rt.Tools().Get("exec"); ok {
				t.Fatal("exec still registered")
			}
		}},
		{"exec back on", func(c *config.Config) {}, []string{"tools.exec.enabled"}, nil, func(t *testing.T) {
			if _, ok := rt.Tools().Get("exec"); !ok {
				t.Fatal("exec not registered again")
			}
		}},
		{"restart-only key", func(c *config.Config) { c.Sentinel.Interval = config.Duration(20 * time.Minute) }, nil,
			[]string{"sentinel.interval"}, func(t *testing.T) {
				if rt.Config().Sentinel.Interval != start.Sentinel.Interval {
					t.Fatalf("effective sentinel.interval %s, want the start-up %s", rt.Config().Sentinel.Interval.D(), start.Sentinel.Interval.D())
				}
			}},
		{"reverted restart-only key", func(c *config.Config) {}, nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := start
			next.Heartbeat.Interval = config.Duration(45 * time.Minute)
			next.Channels.Forward = []string{"telegram:42"}
			next.Log.Level = "debug"
			if tt.name == "exec turned off" {
				next.Tools.Exec.Enabled = false
			}
			tt.change(&next)
			got, err := rt.Reconfigure(next)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Applied, tt.applied) || !slices.Equal(got.RestartNeeded, tt.restart) {
				t.Fatalf("Reconfigure = %+v, want applied %v restart %v", got, tt.applied, tt.restart)
			}
			if tt.check != nil {
				tt.check(t)
			}
		})
	}
}
