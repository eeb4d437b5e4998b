package cron

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/statefile"
)

var t0 = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

type harness struct {
	t      *testing.T
	dir    string
	clk    *clock.Fake
	store  *Store
	runs   *RunLog
	svc    *Service
	fired  chan Run // one per recorded run
	cancel context.CancelFunc
	done   chan error
}

type hopts struct {
	handler  Handler
	channels []string
	decay    int
	ttl      time.Duration
	modify   func(*Options)
}

func newHarness(t *testing.T, o hopts) *harness {
	t.Helper()
	dir := t.TempDir()
	clk := clock.NewFake(t0)
	h := &harness{t: t, dir: dir, clk: clk, fired: make(chan Run, 100)}
	h.store = NewStore(filepath.Join(dir, "cron", "jobs.json"), clk, nil, 5*time.Second)
	h.runs = NewRunLog(filepath.Join(dir, "cron", "runs.jsonl"))
	if o.handler == nil {
		o.handler = func(context.Context, Job, time.Time) (Outcome, error) {
			return Outcome{Status: StatusDelivered, Targets: []Target{{"telegram", "42"}}}, nil
		}
	}
	if o.ttl == 0 {
		o.ttl = time.Minute
	}
	opts := Options{
		Clock: clk, Store: h.store, Runs: h.runs, Handler: o.handler, Channels: o.channels,
		MaxSleep: time.Second, ClaimTTL: o.ttl, JobTimeout: o.ttl / 2, DecayAfter: o.decay, MaxConcurrent: 8,
	}
	if o.modify != nil {
		o.modify(&opts)
	}
	svc, err := NewService(opts)
	if err != nil {
		t.Fatal(err)
	}
	svc.afterFinish = func(rs []Run) {
		for _, r := range rs {
			h.fired <- r
		}
	}
	h.svc = svc
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.svc.Run(ctx) }()
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	h.cancel = nil
	if err := <-h.done; err != nil {
		h.t.Errorf("Run: %v", err)
	}
}

// peer is a second store on the same file, as another process would have.
func (h *harness) peer() *Store {
	return NewStore(h.store.Path(), h.clk, nil, time.Second)
}

func (h *harness) add(s *Store, spec Spec) Job {
	h.t.Helper()
	j, err := NewJob(spec, h.clk.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	j, err = s.Add(context.Background(), j)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

func (h *harness) next() Run {
	h.t.Helper()
	select {
	case r := <-h.fired:
		return r
	case <-time.After(15 * time.Second):
		h.t.Fatal("no fire recorded")
	}
	return Run{}
}

func (h *harness) noFire() {
	h.t.Helper()
	select {
	case r := <-h.fired:
		h.t.Fatalf("unexpected fire %+v", r)
	default:
	}
}

// settle advances the clock in steps of at most the sleep cap so the loop
// observes each step, waiting for it to re-arm its timer in between.
func (h *harness) settle(d time.Duration) {
	for d > 0 {
		h.clk.BlockUntil(1)
		step := min(d, time.Second)
		h.clk.Advance(step)
		d -= step
	}
	h.clk.BlockUntil(1)
}

func TestLoopSeesPeerEditWithinSleepCap(t *testing.T) {
	h := newHarness(t, hopts{})
	h.start()
	h.clk.BlockUntil(1) // the loop sleeps (capped at 1s) with no jobs
	// A peer process adds a job due in 3s while the loop sleeps.
	j := h.add(h.peer(), Spec{Name: "n", Message: "m", Every: "3s", Deliver: true, Channel: "telegram", To: "42"})
	h.settle(2 * time.Second)
	h.noFire()
	h.settle(time.Second)
	r := h.next()
	if r.JobID != j.ID || !r.ScheduledAt.Equal(t0.Add(3*time.Second)) || r.Outcome != StatusDelivered {
		t.Fatalf("run = %+v", r)
	}
	got, _ := h.store.Get(context.Background(), j.ID)
	if got.Claim != nil || got.Fires != 1 || !got.NextRunAt.Equal(t0.Add(6*time.Second)) {
		t.Fatalf("job after fire = %+v", got)
	}
}

func TestChannelFilter(t *testing.T) {
	h := newHarness(t, hopts{channels: []string{"cli"}})
	cli := h.add(h.store, Spec{Name: "c", Message: "m", Every: "1s", Deliver: true})
	h.add(h.store, Spec{Name: "t", Message: "m", Every: "1s", Deliver: true, Channel: "telegram", To: "1"})
	h.add(h.store, Spec{Name: "b", Message: "m", Every: "1s", Broadcast: true})
	h.start()
	h.settle(time.Second)
	r := h.next()
	if r.JobID != cli.ID {
		t.Fatalf("fired %s, want only the cli job %s", r.JobID, cli.ID)
	}
	h.noFire()
}

func TestStaleClaimTakenOverAfterTTL(t *testing.T) {
	ttl := 10 * time.Second
	h := newHarness(t, hopts{ttl: ttl})
	j := h.add(h.store, Spec{Name: "n", Message: "m", Every: "1h", Deliver: true, Channel: "telegram", To: "1"})
	sched := j.NextRunAt
	// A process that died mid-fire left its claim behind.
	dead := &Claim{PID: 999999, Owner: "dead", ClaimedAt: sched, ScheduledAt: sched}
	err := h.store.Update(context.Background(), func(f *File) (bool, error) {
		f.Jobs[0].Claim = dead
		f.Jobs[0].NextRunAt = sched.Add(time.Hour)
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	h.clk.Set(sched)
	h.start()
	h.settle(ttl - time.Second)
	h.noFire()
	h.settle(2 * time.Second)
	r := h.next()
	if !r.ScheduledAt.Equal(sched) {
		t.Fatalf("takeover fired scheduled_at %s, want the dead claim's %s", r.ScheduledAt, sched)
	}
	h.noFire()
	got, _ := h.store.Get(context.Background(), j.ID)
	if got.Claim != nil || !got.NextRunAt.Equal(sched.Add(time.Hour)) {
		t.Fatalf("job = %+v", got)
	}
}

func TestLiveClaimIsNotStolen(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	block := func(ctx context.Context, j Job, at time.Time) (Outcome, error) {
		started <- struct{}{}
		<-release
		return Outcome{Status: StatusDelivered}, nil
	}
	a := newHarness(t, hopts{handler: block})
	j := a.add(a.store, Spec{Name: "n", Message: "m", Every: "1s", Deliver: true, Channel: "telegram", To: "1"})
	a.start()
	a.settle(time.Second)
	<-started
	// Same file, another service: it must not fire the claimed job again.
	var calls int
	var mu sync.Mutex
	b, err := NewService(Options{Clock: a.clk, Store: a.peer(), Runs: a.runs, MaxSleep: time.Second,
		ClaimTTL: time.Minute, JobTimeout: 30 * time.Second,
		Handler: func(context.Context, Job, time.Time) (Outcome, error) {
			mu.Lock()
			calls++
			mu.Unlock()
			return Outcome{}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	batch, _, err := b.tick(context.Background(), a.clk.Now(), nil)
	if err != nil || len(batch) != 0 {
		t.Fatalf("peer claimed %d (err %v)", len(batch), err)
	}
	close(release)
	if r := a.next(); r.JobID != j.ID {
		t.Fatalf("run %+v", r)
	}
}

func TestAutoDecay(t *testing.T) {
	var notices []string
	var mu sync.Mutex
	h := newHarness(t, hopts{decay: 3, modify: func(o *Options) {
		o.Notify = func(_ context.Context, j Job, text string) {
			mu.Lock()
			defer mu.Unlock()
			notices = append(notices, j.ID+": "+text)
		}
	}})
	j := h.add(h.store, Spec{Name: "water", Message: "drink", Every: "1m", Deliver: true, Channel: "telegram", To: "42"})
	h.start()
	// Fire 1, 2; the owner answers after fire 2; then 3 more unanswered
	// fires: disabled on the third of those, not before.
	for i := 0; i < 2; i++ {
		h.settle(time.Minute)
		h.next()
	}
	h.settle(10 * time.Second)
	h.svc.NoteUserActivity("telegram:42")
	h.settle(50 * time.Second)
	h.next()
	for i := 0; i < 1; i++ {
		h.settle(time.Minute)
		h.next()
	}
	got, _ := h.store.Get(context.Background(), j.ID)
	if !got.Enabled || got.Unanswered != 2 {
		t.Fatalf("after the answer: enabled=%v unanswered=%d", got.Enabled, got.Unanswered)
	}
	h.settle(time.Minute)
	h.next()
	got, _ = h.store.Get(context.Background(), j.ID)
	if got.Enabled || !strings.Contains(got.DisabledReason, "auto-decay") {
		t.Fatalf("want disabled by auto-decay, got %+v", got)
	}
	mu.Lock()
	if len(notices) != 1 || !strings.Contains(notices[0], "raven cron enable "+j.ID) {
		t.Fatalf("notices = %q", notices)
	}
	mu.Unlock()
	h.settle(2 * time.Minute)
	h.noFire()
}

func TestDecaySparesSilentAndRespondedJobs(t *testing.T) {
	responded := func(ch, chat string, since time.Time) bool { return ch == "telegram" && chat == "42" }
	h := newHarness(t, hopts{decay: 2, modify: func(o *Options) { o.UserRespondedSince = responded }})
	a := h.add(h.store, Spec{Name: "a", Message: "m", Every: "1m", Deliver: true, Channel: "telegram", To: "42"})
	s := h.add(h.store, Spec{Name: "s", Message: "m", Every: "1m", Silent: true})
	h.start()
	for i := 0; i < 4; i++ {
		h.settle(time.Minute)
		h.next()
		h.next()
	}
	for _, id := range []string{a.ID, s.ID} {
		got, _ := h.store.Get(context.Background(), id)
		if !got.Enabled {
			t.Fatalf("%s disabled: %+v", got.Name, got)
		}
	}
}

func TestAtJobFiresOnceAndRunNowForcesDisabledJob(t *testing.T) {
	h := newHarness(t, hopts{})
	at := h.add(h.store, Spec{Name: "once", Message: "m", At: t0.Add(2 * time.Second).Format(time.RFC3339), Deliver: true, Channel: "telegram", To: "1"})
	h.start()
	h.settle(2 * time.Second)
	if r := h.next(); r.JobID != at.ID {
		t.Fatal(r)
	}
	h.settle(5 * time.Second)
	h.noFire()
	got, _ := h.store.Get(context.Background(), at.ID)
	if got.Enabled || !got.NextRunAt.IsZero() {
		t.Fatalf("spent one-shot = %+v", got)
	}
	if err := h.peer().RequestRun(context.Background(), at.ID); err != nil {
		t.Fatal(err)
	}
	h.settle(time.Second)
	if r := h.next(); r.JobID != at.ID || !r.Forced {
		t.Fatalf("forced run = %+v", r)
	}
}

func TestHandlerErrorAndPanicAreRecorded(t *testing.T) {
	calls := 0
	h := newHarness(t, hopts{handler: func(context.Context, Job, time.Time) (Outcome, error) {
		calls++
		if calls == 1 {
			return Outcome{}, errors.New("boom")
		}
		panic("kaboom")
	}})
	h.add(h.store, Spec{Name: "n", Message: "m", Every: "1s", Deliver: true, Channel: "telegram", To: "1"})
	h.start()
	h.settle(time.Second)
	if r := h.next(); r.Outcome != StatusError || r.Error != "boom" {
		t.Fatalf("run = %+v", r)
	}
	h.settle(time.Second)
	if r := h.next(); r.Outcome != StatusError || !strings.Contains(r.Error, "kaboom") {
		t.Fatalf("run = %+v", r)
	}
}

func TestCorruptFileIsMovedAsideNeverEmptied(t *testing.T) {
	h := newHarness(t, hopts{})
	if err := os.MkdirAll(filepath.Dir(h.store.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.store.Path(), []byte(`{"version":1,"jobs":[{"id":`), 0o600); err != nil {
		t.Fatal(err)
	}
	err := h.svc.Run(context.Background())
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Run = %v, want ErrCorrupt", err)
	}
	aside, _ := filepath.Glob(h.store.Path() + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved aside: %v", aside)
	}
	// Until the owner acts, every read and every write refuses.
	if _, err := h.peer().Jobs(context.Background()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Jobs after move-aside = %v", err)
	}
	j, _ := NewJob(Spec{Name: "n", Message: "m", Every: "1m"}, t0)
	if _, err := h.peer().Add(context.Background(), j); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Add after move-aside = %v", err)
	}
	if _, err := os.Stat(h.store.Path()); !os.IsNotExist(err) {
		t.Fatalf("jobs.json was recreated: %v", err)
	}
	// The owner deletes the broken copy: an empty store is now deliberate.
	os.Remove(aside[0])
	if _, err := h.peer().Add(context.Background(), j); err != nil {
		t.Fatal(err)
	}
}

func TestNewerSchemaRefusedAndUntouched(t *testing.T) {
	h := newHarness(t, hopts{})
	os.MkdirAll(filepath.Dir(h.store.Path()), 0o700)
	body := []byte(`{"version":3,"jobs":[],"future":true}`)
	os.WriteFile(h.store.Path(), body, 0o600)
	if err := h.svc.Run(context.Background()); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Run = %v", err)
	}
	j, _ := NewJob(Spec{Name: "n", Message: "m", Every: "1m"}, t0)
	if _, err := h.store.Add(context.Background(), j); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Add = %v", err)
	}
	got, _ := os.ReadFile(h.store.Path())
	if string(got) != string(body) {
		t.Fatalf("file changed: %s", got)
	}
}

func TestLockTimeoutIsClear(t *testing.T) {
	h := newHarness(t, hopts{})
	h.store.lockTimeout = 50 * time.Millisecond
	peer := statefile.NewLock(h.store.Path() + ".lock")
	if err := peer.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer peer.Release()
	j, _ := NewJob(Spec{Name: "n", Message: "m", Every: "1m"}, t0)
	start := time.Now()
	_, err := h.store.Add(context.Background(), j)
	if !errors.Is(err, statefile.ErrLockTimeout) || !strings.Contains(err.Error(), "jobs.json.lock") {
		t.Fatalf("err = %v", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("took %s", el)
	}
}

func TestConcurrentWritersInProcessLoseNothing(t *testing.T) {
	h := newHarness(t, hopts{})
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := h.peer()
			j, _ := NewJob(Spec{Name: "n", Message: "m", Every: "1m"}, t0)
			if _, err := s.Add(context.Background(), j); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	jobs, err := h.store.Jobs(context.Background())
	if err != nil || len(jobs) != 20 {
		t.Fatalf("jobs = %d, err %v", len(jobs), err)
	}
}

func TestAbandonedClaimReclaimedAtOnceOnlyWhenPidGoneHere(t *testing.T) {
	const ttl = 10 * time.Minute
	tests := []struct {
		name      string
		host      string
		alive     bool
		immediate bool
	}{
		{"same host, pid gone", "here", false, true},
		{"same host, pid alive", "here", true, false},
		{"other host, pid gone", "there", false, false},
		{"no host (older build), pid gone", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, hopts{ttl: ttl, modify: func(o *Options) {
				o.Host = "here"
				o.ProcessAlive = func(pid int) bool { return pid != 4242 || tt.alive }
			}})
			j := h.add(h.store, Spec{Name: "n", Message: "m", Every: "1h", Deliver: true, Channel: "telegram", To: "1"})
			sched := j.NextRunAt
			err := h.store.Update(context.Background(), func(f *File) (bool, error) {
				f.Jobs[0].Claim = &Claim{PID: 4242, Owner: "crashed", Host: tt.host, ClaimedAt: sched, ScheduledAt: sched}
				f.Jobs[0].NextRunAt = sched.Add(time.Hour)
				return true, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			h.clk.Set(sched.Add(time.Second))
			h.start()
			if tt.immediate {
				h.settle(0)
				if r := h.next(); !r.ScheduledAt.Equal(sched) {
					t.Fatalf("run %+v", r)
				}
				h.noFire()
				return
			}
			h.settle(ttl - 2*time.Second)
			h.noFire()
			h.settle(2 * time.Second)
			if r := h.next(); !r.ScheduledAt.Equal(sched) {
				t.Fatalf("run %+v", r)
			}
		})
	}
}
