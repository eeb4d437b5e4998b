package cron

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gofrs/flock"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/statefile"
)

// Status is the outcome of one fire, as written to runs.jsonl.
type Status string

const (
	// StatusDelivered: the output reached at least one target.
	StatusDelivered Status = "delivered"
	// StatusSilent: the job ran; by design nothing was sent.
	StatusSilent Status = "silent"
	// StatusUndelivered: the job ran but no target took the output.
	StatusUndelivered Status = "undelivered"
	// StatusSkipped: nothing to do (a silent job with no model configured).
	StatusSkipped Status = "skipped"
	// StatusError: the fire failed.
	StatusError Status = "error"
)

// Target is one resolved delivery destination.
type Target struct {
	Channel string `json:"channel"`
	ChatID  string `json:"chat_id"`
}

// Outcome is what a Handler reports about one fire.
type Outcome struct {
	Status  Status
	Targets []Target // where the output went (used by auto-decay)
}

// Handler executes one fire outside the lock. scheduledAt is the fire's
// scheduled time (the claim's), not the wall clock.
type Handler func(ctx context.Context, job Job, scheduledAt time.Time) (Outcome, error)

// Options configures a Service. Store, Runs and Handler are required.
type Options struct {
	Clock   clock.Clock
	Logger  *slog.Logger
	Store   *Store
	Runs    *RunLog
	Handler Handler
	// Channels restricts the service to jobs whose DeliveryChannel is in
	// the set ("broadcast" names broadcast jobs). Empty: every job.
	Channels []string
	// MaxSleep caps one sleep of the timer loop (peer edits are seen within
	// it). ClaimTTL, JobTimeout, MaxConcurrent and DecayAfter: see Config.
	// Zero values take the Default* constants; DecayAfter 0 is off.
	MaxSleep      time.Duration
	ClaimTTL      time.Duration
	JobTimeout    time.Duration
	MaxConcurrent int
	DecayAfter    int
	// UserRespondedSince reports whether the owner wrote on channel/chatID
	// after t (the session store); optional.
	UserRespondedSince func(channel, chatID string, t time.Time) bool
	// Notify tells the owner a job was auto-disabled (FireHandler.Notify).
	Notify func(ctx context.Context, job Job, text string)
	// ServiceLock is a file the running service holds shared, so "cron run"
	// can tell whether any service is up (ServiceRunning). Optional.
	ServiceLock string
	// PID is recorded in claims and runs; default os.Getpid().
	PID int
	// Host is recorded in claims (default os.Hostname()): a claim from
	// this host whose pid is gone is taken over at once, not after ClaimTTL.
	Host string
	// ProcessAlive reports whether a pid of this host is live (default
	// statefile.ProcessAlive, kill(pid, 0)).
	ProcessAlive func(pid int) bool
}

// Service is the cron timer loop. Start one per process with Run.
type Service struct {
	opt   Options
	clock clock.Clock
	log   *slog.Logger
	owner string
	allow map[string]bool

	poke    chan struct{}
	results chan result

	// afterFinish, set by tests, runs after each recorded batch.
	afterFinish func([]Run)

	mu       sync.Mutex
	inflight map[string]bool
	activity map[string]time.Time // conversation → last user message seen here
}

type claimed struct {
	job         Job // copy at claim time: LastRunAt is the previous fire
	scheduledAt time.Time
	forced      bool
}

type result struct {
	claimed
	firedAt   time.Time
	finished  time.Time
	outcome   Outcome
	err       error
	responded bool
}

// NewService checks opts and returns a stopped service.
func NewService(opts Options) (*Service, error) {
	if opts.Store == nil || opts.Runs == nil || opts.Handler == nil {
		return nil, errors.New("cron: NewService needs Store, Runs and Handler")
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Runs = opts.Runs.withLogger(opts.Logger)
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&opts.MaxSleep, DefaultMaxSleep)
	def(&opts.JobTimeout, DefaultJobTimeout)
	def(&opts.ClaimTTL, DefaultClaimTTL)
	if opts.ClaimTTL <= opts.JobTimeout {
		return nil, fmt.Errorf("cron: claim TTL %s must exceed job timeout %s", opts.ClaimTTL, opts.JobTimeout)
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.PID == 0 {
		opts.PID = os.Getpid()
	}
	if opts.Host == "" {
		// No hostname: claims carry none and fall back to the TTL.
		opts.Host, _ = os.Hostname()
	}
	if opts.ProcessAlive == nil {
		opts.ProcessAlive = statefile.ProcessAlive
	}
	s := &Service{
		opt:      opts,
		clock:    opts.Clock,
		log:      opts.Logger,
		owner:    randomToken(),
		poke:     make(chan struct{}, 1),
		results:  make(chan result, opts.MaxConcurrent),
		inflight: make(map[string]bool),
		activity: make(map[string]time.Time),
	}
	if len(opts.Channels) > 0 {
		s.allow = make(map[string]bool, len(opts.Channels))
		for _, c := range opts.Channels {
			s.allow[c] = true
		}
	}
	return s, nil
}

func randomToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Poke makes the loop re-read the store now (after an in-process add).
func (s *Service) Poke() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// NoteUserActivity records that the owner wrote on conversation
// ("channel:chat_id"), which resets the auto-decay count of jobs delivering there.
func (s *Service) NoteUserActivity(conversation string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.activity[conversation] = s.clock.Now()
}

// ServiceRunning reports whether some process holds lockPath as a running
// cron service.
func ServiceRunning(lockPath string) (bool, error) {
	fl := flock.New(lockPath)
	ok, err := fl.TryLock()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("cron: probe %s: %w", lockPath, err)
	}
	if ok {
		_ = fl.Unlock()
		return false, nil
	}
	return true, nil
}

// Run drives the timer loop until ctx ends, then waits for running fires
// to finish and records them. A corrupt or newer-schema jobs file stops it
// with that error: no job runs until the owner fixes the file.
func (s *Service) Run(ctx context.Context) error {
	if _, err := s.opt.Store.Snapshot(ctx); err != nil {
		return err
	}
	if s.opt.ServiceLock != "" {
		if err := os.MkdirAll(filepath.Dir(s.opt.ServiceLock), 0o700); err != nil {
			return fmt.Errorf("cron: service lock dir: %w", err)
		}
		fl := flock.New(s.opt.ServiceLock)
		if _, err := fl.TryRLock(); err != nil {
			return fmt.Errorf("cron: service lock: %w", err)
		}
		defer fl.Unlock()
	}
	execCtx, cancelExec := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelExec()
	var (
		execs    sync.WaitGroup
		finisher sync.WaitGroup
	)
	finisher.Add(1)
	go func() {
		defer finisher.Done()
		s.finishLoop()
	}()
	defer func() {
		cancelExec()
		execs.Wait()
		close(s.results)
		finisher.Wait()
	}()

	timer := s.clock.NewTimer(s.opt.MaxSleep)
	defer timer.Stop()
	for {
		now := s.clock.Now()
		batch, wake, err := s.tick(ctx, now, nil)
		switch {
		case errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNewerSchema):
			s.log.Error("cron: stopping: jobs file unusable", "err", err)
			return err
		case err != nil && ctx.Err() == nil:
			s.log.Warn("cron: tick failed; retrying", "err", err)
		}
		for _, c := range batch {
			execs.Add(1)
			go func() {
				defer execs.Done()
				s.results <- s.execute(execCtx, c)
			}()
		}
		d := s.opt.MaxSleep
		if !wake.IsZero() {
			// Measure from after the tick's I/O, or every wake would be late
			// by the time the claim took.
			if w := wake.Sub(s.clock.Now()); w < d {
				d = w
			}
		}
		if err != nil || (d <= 0 && len(batch) == 0 && s.full()) {
			// A failed tick, or due work waiting for a free slot: wait for
			// a finish (which pokes) or the cap instead of spinning.
			d = s.opt.MaxSleep
		}
		timer.Reset(max(d, 0))
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C():
		case <-s.poke:
		}
	}
}

func (s *Service) full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight) >= s.opt.MaxConcurrent
}

// eligible reports whether this service may fire j at all.
func (s *Service) eligible(j *Job) bool {
	return s.allow == nil || s.allow[j.DeliveryChannel()]
}

// due returns when j next needs this service and whether that is a fire
// of a stale claim; zero when never.
func (s *Service) due(j *Job) (at time.Time, takeover bool) {
	if j.Claim != nil {
		if s.abandoned(j.Claim) {
			return j.Claim.ClaimedAt, true
		}
		return j.Claim.ClaimedAt.Add(s.opt.ClaimTTL + time.Nanosecond), true
	}
	if !j.RunRequestedAt.IsZero() {
		at = j.RunRequestedAt
	}
	if j.Enabled && !j.NextRunAt.IsZero() && (at.IsZero() || j.NextRunAt.Before(at)) {
		at = j.NextRunAt
	}
	return at, false
}

// NextWake returns the earliest time any eligible job of f needs this
// service, and how many are due at now. It is the loop's hot path: one pass,
// no allocation.
func (s *Service) NextWake(f *File, now time.Time) (wake time.Time, due int) {
	for i := range f.Jobs {
		j := &f.Jobs[i]
		if !s.eligible(j) {
			continue
		}
		at, _ := s.due(j)
		if at.IsZero() {
			continue
		}
		if !at.After(now) {
			due++
		}
		if wake.IsZero() || at.Before(wake) {
			wake = at
		}
	}
	return wake, due
}

// tick claims due jobs (all, or those only accepts) and returns them with
// the next wake time.
func (s *Service) tick(ctx context.Context, now time.Time, only func(*Job) bool) ([]claimed, time.Time, error) {
	snap, err := s.opt.Store.Snapshot(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	wake, due := s.NextWake(snap, now)
	if due == 0 {
		return nil, wake, nil
	}
	s.mu.Lock()
	free := s.opt.MaxConcurrent - len(s.inflight)
	s.mu.Unlock()
	if free <= 0 {
		return nil, wake, nil
	}
	var batch []claimed
	err = s.opt.Store.edit(ctx, func(f *File, ch *change) error {
		batch = batch[:0]
		for i := range f.Jobs {
			if len(batch) >= free {
				break
			}
			cur := &f.Jobs[i]
			if !s.eligible(cur) || (only != nil && !only(cur)) {
				continue
			}
			j := *cur // f is shared: claim a copy, journal what changed
			c, ok := s.claim(&j, now)
			if ok {
				batch = append(batch, c)
			}
			if ok || j.Enabled != cur.Enabled {
				ch.put(j)
			}
		}
		return nil
	})
	if err != nil {
		return nil, wake, fmt.Errorf("cron: claim: %w", err)
	}
	s.mu.Lock()
	for _, c := range batch {
		s.inflight[c.job.ID] = true
	}
	s.mu.Unlock()
	// Re-read for the next wake: our write, or a peer's claims, moved it.
	if snap, err := s.opt.Store.Snapshot(ctx); err == nil {
		wake, _ = s.NextWake(snap, now)
	}
	return batch, wake, nil
}

// claim takes j's due fire under the lock, advancing its schedule.
func (s *Service) claim(j *Job, now time.Time) (claimed, bool) {
	if j.Claim != nil {
		why := "stale"
		switch {
		case s.abandoned(j.Claim):
			why = "claimant gone"
		case !j.Claim.Stale(now, s.opt.ClaimTTL):
			return claimed{}, false
		}
		old := *j.Claim
		s.log.Warn("cron: taking over claim", "why", why, "job", j.ID, "pid", old.PID, "host", old.Host,
			"claimed_at", old.ClaimedAt, "scheduled_at", old.ScheduledAt)
		j.Claim = s.newClaim(now, old.ScheduledAt, old.Forced)
		return claimed{job: *j, scheduledAt: old.ScheduledAt, forced: old.Forced}, true
	}
	if !j.RunRequestedAt.IsZero() && !j.RunRequestedAt.After(now) {
		at := j.RunRequestedAt
		j.RunRequestedAt = time.Time{}
		j.Claim = s.newClaim(now, at, true)
		return claimed{job: *j, scheduledAt: at, forced: true}, true
	}
	if !j.Enabled || j.NextRunAt.IsZero() || j.NextRunAt.After(now) {
		return claimed{}, false
	}
	c, err := j.Schedule.Compile()
	if err != nil {
		s.log.Error("cron: job has an invalid schedule; disabling it", "job", j.ID, "err", err)
		j.Enabled = false
		j.DisabledReason = "invalid schedule: " + err.Error()
		return claimed{}, false
	}
	at := j.NextRunAt
	next, ok := c.Next(j.CreatedAt, maxTime(at, now))
	if !ok {
		next = time.Time{}
	}
	j.NextRunAt = next
	j.Claim = s.newClaim(now, at, false)
	return claimed{job: *j, scheduledAt: at}, true
}

func (s *Service) newClaim(now, at time.Time, forced bool) *Claim {
	return &Claim{PID: s.opt.PID, Owner: s.owner, Host: s.opt.Host, ClaimedAt: now, ScheduledAt: at, Forced: forced}
}

// abandoned reports whether c's claimant is gone (same host, dead pid); a
// claim of this very service never is.
func (s *Service) abandoned(c *Claim) bool {
	return c.Owner != s.owner && c.Abandoned(s.opt.Host, s.opt.ProcessAlive)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// execute runs one fire outside the lock.
func (s *Service) execute(ctx context.Context, c claimed) result {
	ctx, cancel := context.WithTimeout(ctx, s.opt.JobTimeout)
	defer cancel()
	r := result{claimed: c, firedAt: s.clock.Now()}
	s.log.Info("cron: firing", "job", c.job.ID, "name", c.job.Name, "scheduled_at", c.scheduledAt,
		"late", r.firedAt.Sub(c.scheduledAt), "forced", c.forced)
	out, err := s.safeHandle(ctx, c)
	r.outcome, r.err = out, err
	if err != nil && out.Status == "" {
		r.outcome.Status = StatusError
	}
	if r.outcome.Status == "" {
		r.outcome.Status = StatusDelivered
	}
	r.finished = s.clock.Now()
	r.responded = s.responded(c.job, r.outcome.Targets)
	return r
}

func (s *Service) safeHandle(ctx context.Context, c claimed) (out Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("cron: handler panicked: %v", p)
			out = Outcome{Status: StatusError}
		}
	}()
	return s.opt.Handler(ctx, c.job, c.scheduledAt)
}

// responded reports whether the owner wrote to any target since the job's
// previous fire.
func (s *Service) responded(j Job, targets []Target) bool {
	since := j.LastRunAt
	if since.IsZero() {
		return false
	}
	s.mu.Lock()
	for _, t := range targets {
		if at, ok := s.activity[spine.ConversationKey(t.Channel, t.ChatID)]; ok && at.After(since) {
			s.mu.Unlock()
			return true
		}
	}
	s.mu.Unlock()
	if f := s.opt.UserRespondedSince; f != nil {
		for _, t := range targets {
			if f(t.Channel, t.ChatID, since) {
				return true
			}
		}
	}
	return false
}

// finishLoop records finished fires, batching whatever finished together
// into one locked write.
func (s *Service) finishLoop() {
	for r := range s.results {
		batch := []result{r}
	drain:
		for {
			select {
			case r2, ok := <-s.results:
				if !ok {
					break drain
				}
				batch = append(batch, r2)
			default:
				break drain
			}
		}
		s.finish(batch)
		s.Poke()
	}
}

// finish clears our claims and records the fires, then appends them to
// runs.jsonl. Claims are cleared before the run lines are written: a crash
// in between loses a log line but never fires twice.
func (s *Service) finish(batch []result) {
	var notices []Job
	update := func(f *File, ch *change) error {
		notices = notices[:0]
		for i := range batch {
			r := &batch[i]
			k := f.Find(r.job.ID)
			if k < 0 {
				continue // removed while running
			}
			if c := f.Jobs[k].Claim; c == nil || c.Owner != s.owner || !c.ScheduledAt.Equal(r.scheduledAt) {
				s.log.Warn("cron: our claim was taken over before the fire finished", "job", r.job.ID)
				continue
			}
			j := f.Jobs[k] // f is shared: record on a copy, journal it
			if s.record(&j, r) {
				notices = append(notices, j)
			}
			ch.put(j)
		}
		return nil
	}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*s.opt.Store.lockTimeout)
		err = s.opt.Store.edit(ctx, update)
		cancel()
		if err == nil || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNewerSchema) {
			break
		}
	}
	if err != nil {
		s.log.Error("cron: could not record finished fires; their claims expire after the TTL", "err", err, "jobs", len(batch))
	}
	s.mu.Lock()
	for _, r := range batch {
		delete(s.inflight, r.job.ID)
	}
	s.mu.Unlock()
	runs := make([]Run, 0, len(batch))
	defer func() {
		if s.afterFinish != nil {
			s.afterFinish(runs)
		}
	}()
	for _, r := range batch {
		run := Run{
			JobID: r.job.ID, Name: r.job.Name, ScheduledAt: r.scheduledAt, FiredAt: r.firedAt,
			FinishedAt: r.finished, PID: s.opt.PID, Outcome: r.outcome.Status, Forced: r.forced,
		}
		if r.err != nil {
			run.Error = r.err.Error()
			s.log.Warn("cron: fire failed", "job", r.job.ID, "err", r.err)
		}
		if err := s.opt.Runs.Append(run); err != nil {
			s.log.Error("cron: append run", "job", r.job.ID, "err", err)
		}
		runs = append(runs, run)
	}
	for _, j := range notices {
		text := fmt.Sprintf("I paused the scheduled job %q (%s): it fired %d times in a row with no reply from you. "+
			"Turn it back on with: raven cron enable %s", j.Name, j.ID, j.Unanswered, j.ID)
		s.log.Warn("cron: auto-decay disabled job", "job", j.ID, "name", j.Name, "unanswered", j.Unanswered)
		if s.opt.Notify != nil {
			ctx, cancel := context.WithTimeout(context.Background(), s.opt.JobTimeout)
			s.opt.Notify(ctx, j, text)
			cancel()
		}
	}
}

// record writes fire r into j and reports whether it just auto-disabled j.
func (s *Service) record(j *Job, r *result) bool {
	j.Claim = nil
	j.LastRunAt = r.firedAt
	j.LastScheduledAt = r.scheduledAt
	j.LastStatus = string(r.outcome.Status)
	j.LastError = ""
	if r.err != nil {
		j.LastError = r.err.Error()
	}
	j.Fires++
	if r.forced {
		return false
	}
	if !j.Schedule.Recurring() && j.NextRunAt.IsZero() {
		j.Enabled = false
		return false
	}
	return s.decays(j, r)
}

// decays updates j's unanswered count after a delivered fire and reports
// whether it has just been disabled for it.
func (s *Service) decays(j *Job, r *result) bool {
	if s.opt.DecayAfter <= 0 || j.Mode() == ModeSilent || r.outcome.Status != StatusDelivered {
		return false
	}
	if r.responded {
		j.Unanswered = 1
	} else {
		j.Unanswered++
	}
	if j.Unanswered < s.opt.DecayAfter || !j.Enabled {
		return false
	}
	j.Enabled = false
	j.DisabledReason = fmt.Sprintf("auto-decay: %d fires with no response", j.Unanswered)
	return true
}

// FireRequested fires job id now in this process, synchronously: the path
// of "raven cron run" when no service is running. It goes through the same
// claim and record steps as the loop, so a service starting meanwhile
// cannot fire it a second time.
func (s *Service) FireRequested(ctx context.Context, id string) (Run, error) {
	if err := s.opt.Store.RequestRun(ctx, id); err != nil {
		return Run{}, err
	}
	now := s.clock.Now()
	batch, _, err := s.tick(ctx, now, func(j *Job) bool { return j.ID == id })
	if err != nil {
		return Run{}, err
	}
	if len(batch) == 0 {
		return Run{}, fmt.Errorf("cron: job %s is being fired by another process", id)
	}
	r := s.execute(ctx, batch[0])
	s.finish([]result{r})
	run := Run{JobID: id, Name: r.job.Name, ScheduledAt: r.scheduledAt, FiredAt: r.firedAt, FinishedAt: r.finished,
		PID: s.opt.PID, Outcome: r.outcome.Status, Forced: true}
	if r.err != nil {
		run.Error = r.err.Error()
	}
	return run, r.err
}
