package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
)

// Build refuses what it cannot wire, and says which part failed.
func TestBuildErrors(t *testing.T) {
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	badModel := config.Default()
	badModel.Model = "nosuch/model"
	cases := []struct {
		name string
		o    Options
		is   error
		text string
	}{
		{name: "no data dir", o: Options{Config: config.Default()}, is: ErrMissingDependency},
		{name: "bad model", o: Options{Paths: p, Config: badModel}, text: "runtime: model: model nosuch/model"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := Build(context.Background(), tc.o)
			if err == nil {
				rt.Close(context.Background())
				t.Fatal("Build succeeded")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			if tc.text != "" && (len(err.Error()) < len(tc.text) || err.Error()[:len(tc.text)] != tc.text) {
				t.Fatalf("err = %q, want it to start %q", err, tc.text)
			}
		})
	}
}

// Every entry point gets the same tools from Build, whatever services run.
func TestBuildRegistersEveryTool(t *testing.T) {
	for _, svc := range []Services{ServicesNone, ServiceCron, ServicesGateway} {
		rt, _ := newApp(t, false, llm.NewScripted(nil), func(o *Options) { o.Services = svc })
		for _, name := range []string{"read_file", "write_file", "edit_file", "list_dir", "message", "spawn", "ask_user", "cron", feedback.ToolName, "web_fetch", "web_search",
			"memory_search", "remember"} {
			if _, ok := rt.Tools().Get(name); !ok {
				t.Errorf("services %b: tool %s not registered", svc, name)
			}
		}
		for _, ch := range []string{CLIChannel, "tui", OutboxChannel} {
			if !rt.Hub().Has(ch) {
				t.Errorf("services %b: no %s outlet", svc, ch)
			}
		}
		rt.Close(context.Background())
	}
}

// NoModel keeps the configured model out (cron serve|run): a delivering
// job's message goes out verbatim.
func TestBuildNoModel(t *testing.T) {
	var logs syncBuffer
	t.Setenv("OPENAI_API_KEY", "sk-test")
	rt, clk := newApp(t, false, nil, func(o *Options) {
		o.Config.Model, o.NoModel = "openai/gpt-4o-mini", true
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	if rt.Provider() != nil || rt.ProviderName() != "none" {
		t.Fatalf("provider = %v", rt.Provider())
	}
	// A model is configured; this process just runs none of it.
	if strings.Contains(logs.String(), "no model configured") {
		t.Fatalf("logged a false \"no model configured\":\n%s", logs.String())
	}
	var screen collector
	if _, err := rt.Attach(context.Background(), CLIConversation, &screen); err != nil {
		t.Fatal(err)
	}
	job, err := cron.NewJob(cron.Spec{Name: "tea", Message: "Tea time.", Every: "1h", Deliver: true}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if job, err = rt.CronStore().Add(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	if run, err := rt.FireCron(context.Background(), job.ID); err != nil || run.Outcome != cron.StatusDelivered {
		t.Fatalf("fire = %+v, %v", run, err)
	}
	if got := screen.contents(); len(got) != 1 || got[0] != "Tea time." {
		t.Fatalf("shown %q", got)
	}
	if _, err := rt.Attach(context.Background(), "telegram:1", &screen); !errors.Is(err, ErrNotSurface) {
		t.Fatalf("attach to a real channel: %v", err)
	}
}

// The daemon's channels are in place before any service loop runs: a job
// already due when the gateway starts goes to Telegram, not the outbox.
func TestStartChannelsBeforeServices(t *testing.T) {
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC))
	store := cron.NewStore(p.CronJobs(), clk, nil, time.Second)
	job, err := cron.NewJob(cron.Spec{Name: "bins", Message: "Bins out tonight.", At: clk.Now().Add(time.Second).Format(time.RFC3339), Deliver: true, Channel: "telegram", To: "42"}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Add(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute) // overdue at start
	tg := &collector{}
	rt, err := Build(context.Background(), Options{Paths: p, Config: config.Default(), Clock: clk, NoModel: true, Services: ServiceCron,
		StartChannels: func(rt *Runtime) error {
			rt.Hub().Register("telegram", tg)
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	eventually(t, "the overdue job on telegram", func() bool { return len(tg.contents()) == 1 })
	if n, _ := rt.Outbox().Count(context.Background()); n != 0 {
		t.Fatalf("%d kept in the outbox", n)
	}
}

// Build clears the temp files of atomic writes a crash interrupted, and
// nothing else.
func TestBuildSweepsInterruptedWrites(t *testing.T) {
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	litter := filepath.Join(p.SentinelDir(), fmt.Sprintf(".state.json.tmp-%d-12345", dead.Process.Pid))
	owner := filepath.Join(p.Workspace(), "notes.tmp")
	for _, f := range []string{litter, owner} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := Build(context.Background(), Options{Paths: p, Config: config.Default()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	if _, err := os.Stat(litter); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp file of an interrupted write survived Build: %v", err)
	}
	if _, err := os.Stat(owner); err != nil {
		t.Errorf("the owner's file was swept: %v", err)
	}
}
