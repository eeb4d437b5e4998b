package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

// SubagentManager runs micro-agent turns in the background and delivers
// each result back to the conversation that asked for it.
type SubagentManager struct {
	ctx    context.Context
	submit func(spine.TurnRequest) (*spine.Ticket, error)
	post   func(context.Context, spine.Message) error
	log    *slog.Logger
	// OnDone, when set, is called after each subagent finishes (the wake
	// scheduler's RequestWakeNow).
	OnDone func(id string)

	wg      sync.WaitGroup
	running atomic.Int64
}

// NewSubagentManager returns a manager whose subagents live at most as long
// as ctx. submit queues SUBAGENT turns; post delivers results.
func NewSubagentManager(ctx context.Context, submit func(spine.TurnRequest) (*spine.Ticket, error), post func(context.Context, spine.Message) error, log *slog.Logger) *SubagentManager {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &SubagentManager{ctx: ctx, submit: submit, post: post, log: log}
}

// Spawn starts a subagent on task and returns its id at once. The result
// (or the failure) is posted to channel:chatID when the subagent finishes.
func (m *SubagentManager) Spawn(ctx context.Context, task, channel, chatID string) (string, error) {
	return m.start(ctx, task, func(id string, res spine.Result, waitErr error) {
		if waitErr != nil {
			return // shutting down
		}
		text := res.Reply
		if res.Err != nil {
			text = fmt.Sprintf("Subagent %s failed: %v", id, res.Err)
		}
		msg := spine.Message{Channel: channel, ChatID: chatID, Content: text, Origin: spine.OriginSubagent, Proactive: true,
			Extras: map[string]any{"subagent_id": id}}
		if err := m.post(context.WithoutCancel(m.ctx), msg); err != nil {
			m.log.Warn("subagent result not delivered", "id", id, "channel", channel, "err", err)
		}
	})
}

// Run starts a subagent on task and returns once it is queued. Unlike
// Spawn it posts nothing: done receives the result (or the failure)
// exactly once, so the caller delivers it its own way — the Sentinel
// through its nudge dispatcher, which records it in the owner's session
// and tracks it for feedback. done is never called when Run returns an
// error; a subagent the runtime's shutdown ends gets done with that error,
// so its requester can still tell the owner it did not finish.
func (m *SubagentManager) Run(ctx context.Context, task string, done func(ctx context.Context, result string, err error)) error {
	_, err := m.start(ctx, task, func(id string, res spine.Result, waitErr error) {
		dctx := context.WithoutCancel(m.ctx)
		switch {
		case waitErr != nil:
			done(dctx, "", fmt.Errorf("subagent %s stopped before it finished: %w", id, waitErr))
		case res.Err != nil:
			done(dctx, "", fmt.Errorf("subagent %s: %w", id, res.Err))
		default:
			done(dctx, res.Reply, nil)
		}
	})
	return err
}

// start queues the subagent's turn and hands finish its result, or the
// error that ended the wait for it (shutdown).
func (m *SubagentManager) start(ctx context.Context, task string, finish func(id string, res spine.Result, waitErr error)) (string, error) {
	var b [4]byte
	rand.Read(b[:])
	id := "sa-" + hex.EncodeToString(b[:])
	req := spine.TurnRequest{
		Origin: spine.OriginSubagent, ConversationID: "subagent:" + id, Channel: "subagent", ChatID: id,
		Content: "You are a background subagent. Complete this task and reply with the result only:\n\n" + task,
	}
	// A subagent inherits its parent's cron lineage: it may not schedule
	// jobs either.
	if turn, ok := tools.TurnFrom(ctx); ok && turn.FromCron {
		req.Extras = map[string]any{tools.ExtraFromCron: true}
	}
	// Work an ambient source started (a Sentinel spawn) is charged to it.
	if tag, ok := llm.CallTagFrom(ctx); ok && tag.Origin != "" {
		if req.Extras == nil {
			req.Extras = map[string]any{}
		}
		req.Extras[ExtraUsageOrigin] = tag.Origin
	}
	tk, err := m.submit(req)
	if err != nil {
		return "", fmt.Errorf("agent: spawn subagent: %w", err)
	}
	m.wg.Add(1)
	m.running.Add(1)
	go func() {
		defer m.wg.Done()
		defer m.running.Add(-1)
		res, err := tk.Wait(m.ctx)
		if err != nil {
			select {
			case <-tk.Done():
				// It finished as the runtime stopped: the result is there.
				res, err = tk.Wait(context.Background())
			default:
			}
		}
		if err != nil {
			m.log.Info("subagent ended by shutdown", "id", id)
			finish(id, res, err)
			return
		}
		if res.Err != nil {
			m.log.Warn("subagent failed", "id", id, "err", res.Err)
		}
		finish(id, res, nil)
		if m.OnDone != nil {
			m.OnDone(id)
		}
	}()
	return id, nil
}

// Running is how many started subagents have not yet delivered or given up.
func (m *SubagentManager) Running() int { return int(m.running.Load()) }

// Wait blocks until every started subagent has delivered or given up.
func (m *SubagentManager) Wait() { m.wg.Wait() }
