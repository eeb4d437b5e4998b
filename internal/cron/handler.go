package cron

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
)

// FireOptions are the seams of the on_cron_job handler.
type FireOptions struct {
	// Hub delivers verbatim messages, broadcast replies and notices.
	Hub *spine.Hub
	// Submit hands a turn to the spine scheduler. Nil means no model is
	// configured: delivering jobs then post their message verbatim.
	Submit func(spine.TurnRequest) (*spine.Ticket, error)
	// Forward is config.Channels.Forward: "channel" or "channel:chat_id"
	// entries an ephemeral channel (cli, tui) expands to.
	Forward []string
	// LastChatID returns the chat of the channel's most recent session.
	LastChatID func(channel string) (string, bool)
	// Resolve, when set, replaces the built-in resolution of a job's
	// channel and chat: the runtime's one target resolver (an attached
	// surface, forward channels, the most recent real channel, else the
	// outbox), asked at fire time.
	Resolve func(channel, to string) []Target
	// ResolveBroadcast, when set, gives a broadcast job's targets (every
	// attached surface and forward channel) instead of the built-in ones.
	ResolveBroadcast func() []Target
	// RecordFire writes the shared NudgePolicy ledger (policy
	// RecordCronFire: topic-tag fire plus a dispatched record marked
	// neutral), so the Sentinel does not nudge the same topic meanwhile.
	RecordFire func(ctx context.Context, topic, content string) error
	// OnFired runs after every completed fire (the heartbeat wake).
	OnFired func(jobID string)
	Logger  *slog.Logger
}

// FireHandler is the on_cron_job handler: it turns a fire into a
// CRON-origin turn (or a verbatim message) and delivers it per the job's mode.
type FireHandler struct {
	o   FireOptions
	log *slog.Logger
}

// NewFireHandler returns the handler; pass its Handle to Options.Handler
// and its Notify to Options.Notify.
func NewFireHandler(o FireOptions) *FireHandler {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &FireHandler{o: o, log: log}
}

// ErrNoTarget is reported when a delivering job resolves to no target.
var ErrNoTarget = errors.New("cron: no delivery target")

// Handle fires job. It is a Handler.
func (h *FireHandler) Handle(ctx context.Context, job Job, scheduledAt time.Time) (Outcome, error) {
	out, err := h.handle(ctx, job, scheduledAt)
	if err == nil && (out.Status == StatusDelivered || out.Status == StatusSilent) && h.o.RecordFire != nil {
		// The topic is tagged from the message the way the Sentinel tags
		// its own nudges, so "Stand-up in 5" from a job named job1 covers
		// the planner's "Reminder: stand-up in 5 minutes".
		if rerr := h.o.RecordFire(ctx, policy.DeriveTopic(job.Message), job.Message); rerr != nil {
			h.log.Warn("cron: record fire in policy ledger", "job", job.ID, "err", rerr)
		}
	}
	if h.o.OnFired != nil {
		h.o.OnFired(job.ID)
	}
	return out, err
}

func (h *FireHandler) handle(ctx context.Context, job Job, scheduledAt time.Time) (Outcome, error) {
	mode := job.Mode()
	if mode == ModeSilent {
		if h.o.Submit == nil {
			return Outcome{Status: StatusSkipped}, nil
		}
		// The job's own ephemeral channel as source: the hub drops the reply.
		if _, err := h.turn(ctx, job, scheduledAt, "cron", job.ID); err != nil {
			return Outcome{Status: StatusError}, err
		}
		return Outcome{Status: StatusSilent}, nil
	}
	var targets []Target
	if mode == ModeBroadcast {
		targets = h.broadcastTargets()
	} else {
		targets = h.resolve(job.Channel, job.To)
	}
	if len(targets) == 0 {
		return Outcome{Status: StatusUndelivered}, fmt.Errorf("%w for job %s (channel %q; configure channels.forward or attach a surface)",
			ErrNoTarget, job.ID, job.DeliveryChannel())
	}
	if h.o.Submit == nil {
		return h.post(ctx, job, targets, job.Message)
	}
	if mode == ModeSingle && len(targets) == 1 {
		// One target: the reply rides the hub to its outlet.
		res, err := h.turn(ctx, job, scheduledAt, targets[0].Channel, targets[0].ChatID)
		if err != nil {
			return Outcome{Status: StatusError, Targets: targets}, err
		}
		switch {
		case res.Delivered:
			return Outcome{Status: StatusDelivered, Targets: targets}, nil
		case res.Reply == "":
			return Outcome{Status: StatusSilent}, nil
		}
		return Outcome{Status: StatusUndelivered, Targets: targets}, fmt.Errorf("cron: reply to %s:%s not delivered", targets[0].Channel, targets[0].ChatID)
	}
	// Broadcast (or a single job that expanded to several targets): run on
	// the job's own channel so the hub drops the reply, then deliver it to
	// every target explicitly.
	res, err := h.turn(ctx, job, scheduledAt, "cron", job.ID)
	if err != nil {
		return Outcome{Status: StatusError, Targets: targets}, err
	}
	if res.Reply == "" {
		return Outcome{Status: StatusSilent}, nil
	}
	return h.post(ctx, job, targets, res.Reply)
}

// turn submits a CRON-origin turn on conversation cron:<id> and waits for it.
func (h *FireHandler) turn(ctx context.Context, job Job, scheduledAt time.Time, channel, chatID string) (spine.Result, error) {
	req := spine.TurnRequest{
		Origin:         spine.OriginCron,
		ConversationID: job.Conversation(),
		Channel:        channel,
		ChatID:         chatID,
		Content:        fmt.Sprintf("[Scheduled job %q (%s), due %s]\n%s", job.Name, job.ID, scheduledAt.Format(time.RFC3339), job.Message),
		Busy:           spine.Append,
		Extras:         map[string]any{"cron_job_id": job.ID, "cron_scheduled_at": scheduledAt},
	}
	t, err := h.o.Submit(req)
	if err != nil {
		return spine.Result{}, fmt.Errorf("cron: submit job %s: %w", job.ID, err)
	}
	res, err := t.Wait(ctx)
	if err != nil {
		return res, fmt.Errorf("cron: job %s turn: %w", job.ID, err)
	}
	if res.Err != nil {
		return res, fmt.Errorf("cron: job %s turn: %w", job.ID, res.Err)
	}
	return res, nil
}

// post delivers content to every target through the hub; delivered when at
// least one outlet took it.
func (h *FireHandler) post(ctx context.Context, job Job, targets []Target, content string) (Outcome, error) {
	var (
		ok   []Target
		errs []error
	)
	for _, t := range targets {
		err := h.o.Hub.Post(ctx, spine.Message{
			Channel: t.Channel, ChatID: t.ChatID, Content: content,
			Origin: spine.OriginCron, Proactive: true,
			Extras: map[string]any{"cron_job_id": job.ID},
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ok = append(ok, t)
	}
	if len(ok) == 0 {
		return Outcome{Status: StatusUndelivered, Targets: targets}, errors.Join(errs...)
	}
	if len(errs) > 0 {
		h.log.Warn("cron: some targets missed the message", "job", job.ID, "err", errors.Join(errs...))
	}
	return Outcome{Status: StatusDelivered, Targets: ok}, nil
}

// Notify posts an owner notice about job (auto-decay) to the job's own
// targets, or to every owner surface when it has none.
func (h *FireHandler) Notify(ctx context.Context, job Job, text string) {
	targets := h.resolve(job.Channel, job.To)
	if job.Broadcast || len(targets) == 0 {
		targets = h.broadcastTargets()
	}
	for _, t := range targets {
		if err := h.o.Hub.Post(ctx, spine.Message{Channel: t.Channel, ChatID: t.ChatID, Content: text,
			Origin: spine.OriginCron, Proactive: true, Extras: map[string]any{"cron_job_id": job.ID, "cron_notice": true}}); err != nil {
			h.log.Warn("cron: notice not delivered", "job", job.ID, "channel", t.Channel, "err", err)
		}
	}
}

// Targets resolves where job would deliver right now.
func (h *FireHandler) Targets(job Job) []Target {
	if job.Mode() == ModeBroadcast {
		return h.broadcastTargets()
	}
	if job.Mode() == ModeSilent {
		return nil
	}
	return h.resolve(job.Channel, job.To)
}

func (h *FireHandler) broadcastTargets() []Target {
	if h.o.ResolveBroadcast != nil {
		return dedupe(h.o.ResolveBroadcast())
	}
	return dedupe(append(h.resolve("cli", ""), h.resolve("tui", "")...))
}

// resolve maps a job's channel to targets at fire time, so a change to
// channels.forward or a new session takes effect on the next fire. A real
// channel passes through; an ephemeral one (cli, tui) means the surface
// itself when someone is attached plus every forward channel.
func (h *FireHandler) resolve(channel, to string) []Target {
	if channel == "" {
		channel = "cli"
	}
	if h.o.Resolve != nil {
		return dedupe(h.o.Resolve(channel, to))
	}
	if !spine.IsEphemeral(channel) {
		if t, ok := h.real(channel, to); ok {
			return []Target{t}
		}
		return nil
	}
	var out []Target
	if h.o.Hub != nil && h.o.Hub.Has(channel) {
		chat := to
		if chat == "" && h.o.LastChatID != nil {
			chat, _ = h.o.LastChatID(channel)
		}
		out = append(out, Target{Channel: channel, ChatID: chat})
	}
	for _, f := range h.o.Forward {
		ch, chat, _ := strings.Cut(f, ":")
		if ch == "" || spine.IsEphemeral(ch) {
			continue
		}
		if t, ok := h.real(ch, chat); ok {
			out = append(out, t)
		}
	}
	return dedupe(out)
}

func (h *FireHandler) real(channel, chat string) (Target, bool) {
	if chat == "" && h.o.LastChatID != nil {
		chat, _ = h.o.LastChatID(channel)
	}
	if chat == "" {
		h.log.Warn("cron: no chat known for channel; no session yet", "channel", channel)
		return Target{}, false
	}
	return Target{Channel: channel, ChatID: chat}, true
}

func dedupe(ts []Target) []Target {
	seen := make(map[Target]bool, len(ts))
	out := ts[:0]
	for _, t := range ts {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}
