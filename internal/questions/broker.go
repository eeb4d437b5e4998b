package questions

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
)

// DefaultAskBudget is tools.ask_user.timeout's default.
const DefaultAskBudget = 600 * time.Second

// closedMemory is how long a finished call is remembered so a late answer
// can be told it expired rather than "no question".
const (
	closedMemory = time.Hour
	closedMax    = 4096
)

// BrokerOptions are the Broker's dependencies.
type BrokerOptions struct {
	Clock  clock.Clock
	Logger *slog.Logger
	// Notify emits clarify.request to TUI clients of conv. May be nil.
	Notify func(conv string, req ClarifyRequest)
	// Post renders the question on a chat channel. May be nil.
	Post func(ctx context.Context, channel, chatID, text string) error
	// NewID mints batch IDs; defaults to random UUIDs.
	NewID func() string
	// OnResolved observes how each asked question ended (the event log's
	// clarify.resolved). May be nil. Called without the broker's lock.
	OnResolved func(conv string, r Resolution)
}

// Resolution says how one asked question ended. It never carries the
// answer, so it is safe to log.
type Resolution struct {
	Batch string
	// Index (0-based) and Total place the question in its call.
	Index  int
	Total  int
	Status AnswerStatus
}

// ErrAskCancelled is the error of an ask_user call ended by CancelAll; its
// text is what the model reads ("cancelled: <reason>").
var ErrAskCancelled = errors.New("cancelled")

// Route says where a conversation lives, for channel rendering.
type Route struct {
	Conversation string
	Channel      string
	ChatID       string
}

// Broker pauses a turn on ask_user until the owner answers, the shared
// budget ends, or a newer call supersedes it. At most one question is
// pending per conversation.
type Broker struct {
	clk    clock.Clock
	log    *slog.Logger
	notify func(string, ClarifyRequest)
	post   func(context.Context, string, string, string) error
	newID  func() string
	onRes  func(string, Resolution)

	mu      sync.Mutex
	pending map[string]*pendingAsk
	closed  map[string]closedMark
	// cancelled, once set by CancelAll, ends every wait and refuses new
	// ones with this reason.
	cancelled string
}

type pendingAsk struct {
	batch    string
	index    int
	total    int
	deadline time.Time
	q        Question
	done     chan struct{} // closed once state leaves waiting
	state    AnswerStatus  // "" while waiting
	ans      Answer
}

type closedMark struct {
	batch string
	at    time.Time
	// unanswered is set when the call ended without the owner's answer
	// (timeout), so a late reply on a chat channel can be told so.
	unanswered bool
}

// NewBroker returns a broker.
func NewBroker(o BrokerOptions) *Broker {
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.NewID == nil {
		o.NewID = newUUID
	}
	return &Broker{
		clk: o.Clock, log: o.Logger, notify: o.Notify, post: o.Post, newID: o.NewID, onRes: o.OnResolved,
		pending: make(map[string]*pendingAsk),
		closed:  make(map[string]closedMark),
	}
}

// Ask asks qs on conv (a "channel:chat_id" key) and waits for the answers.
func (b *Broker) Ask(ctx context.Context, conv string, qs []Question, budget time.Duration) ([]Answer, error) {
	ch, chat, _ := spine.SplitConversationKey(conv)
	return b.AskVia(ctx, Route{Conversation: conv, Channel: ch, ChatID: chat}, qs, budget)
}

// AskVia asks qs one at a time within ONE budget shared by the whole call,
// so a batch cannot hold the lane longer than a single question could.
// Questions left when the budget ends (or the call is superseded) come back
// with that status; they are never filled with the recommended choice. The
// error is non-nil only for invalid input or when ctx is cancelled.
func (b *Broker) AskVia(ctx context.Context, r Route, qs []Question, budget time.Duration) ([]Answer, error) {
	if err := checkString("conversation", r.Conversation, MaxConversationLen, true); err != nil {
		return nil, err
	}
	if err := validateQuestions(qs); err != nil {
		return nil, err
	}
	if budget <= 0 {
		budget = DefaultAskBudget
	}
	batch := b.newID()
	deadline := b.clk.Now().Add(budget)
	timer := b.clk.NewTimer(budget)
	defer timer.Stop()

	answers := make([]Answer, len(qs))
	for i, q := range qs {
		answers[i] = Answer{Index: i, Question: q.Question, ChoiceIndex: -1}
	}
	finish := func(from int, st AnswerStatus) []Answer {
		for j := from; j < len(answers); j++ {
			answers[j].Status = st
		}
		return answers
	}
	for i, q := range qs {
		p := &pendingAsk{batch: batch, index: i, total: len(qs), deadline: deadline, q: q, done: make(chan struct{})}
		asked := b.install(r.Conversation, p)
		if asked {
			b.emit(ctx, r, p)
		}
		select {
		case <-p.done:
		case <-timer.C():
			b.resolve(r.Conversation, p, AnswerTimeout)
		case <-ctx.Done():
			b.resolve(r.Conversation, p, AnswerCancelled)
		}
		b.mu.Lock()
		st, ans, reason := p.state, p.ans, b.cancelled
		b.mu.Unlock()
		if b.onRes != nil && asked {
			b.onRes(r.Conversation, Resolution{Batch: batch, Index: i, Total: len(qs), Status: st})
		}
		switch st {
		case AnswerGiven:
			ans.Index = i
			answers[i] = ans
			continue
		case AnswerCancelled:
			err := ctx.Err()
			if err == nil && reason != "" {
				err = fmt.Errorf("%w: %s", ErrAskCancelled, reason)
			}
			return finish(i, AnswerCancelled), err
		default:
			b.log.Info("ask_user ended without an answer", "conversation", r.Conversation, "batch", batch, "status", st, "answered", i)
			return finish(i, st), nil
		}
	}
	b.remember(r.Conversation, batch)
	return answers, nil
}

// install makes p the conversation's pending question, failing the stale one
// safe: its call returns "superseded" instead of waiting out its budget.
// After CancelAll it ends p at once instead and returns false.
func (b *Broker) install(conv string, p *pendingAsk) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cancelled != "" {
		p.state = AnswerCancelled
		close(p.done)
		return false
	}
	if old := b.pending[conv]; old != nil && old.batch != p.batch {
		old.state = AnswerSuperseded
		close(old.done)
		b.rememberLocked(conv, old.batch)
	}
	b.pending[conv] = p
	return true
}

// CancelAll ends every pending ask_user wait as cancelled, and any later
// one at once: the tool returns "cancelled: <reason>" to the model. The
// gateway calls it when shutdown starts, so a turn blocked on the owner
// finishes promptly instead of holding the whole grace period.
func (b *Broker) CancelAll(reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if reason == "" {
		reason = "the question was withdrawn"
	}
	b.cancelled = reason
	for conv, p := range b.pending {
		p.state = AnswerCancelled
		close(p.done)
		delete(b.pending, conv)
		b.rememberLocked(conv, p.batch)
	}
}

// Pending returns the clarify.request of conv's waiting question, with the
// budget left now, so a TUI that attaches mid-question can be shown it.
func (b *Broker) Pending(conv string) (ClarifyRequest, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pending[conv]
	if p == nil {
		return ClarifyRequest{}, false
	}
	return p.request(b.clk.Now()), true
}

// request is p's clarify.request as of now.
func (p *pendingAsk) request(now time.Time) ClarifyRequest {
	choices := p.q.Choices
	if choices == nil {
		choices = []string{}
	}
	return ClarifyRequest{
		Question: p.q.Question, Choices: choices, Header: p.q.Header, Recommended: p.q.Recommended,
		TimeoutS: int(math.Ceil(max(p.deadline.Sub(now), 0).Seconds())), Index: p.index, Total: p.total, Batch: p.batch,
	}
}

// resolve ends p with st unless an answer won the race.
func (b *Broker) resolve(conv string, p *pendingAsk, st AnswerStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p.state != "" {
		return
	}
	p.state = st
	close(p.done)
	if b.pending[conv] == p {
		delete(b.pending, conv)
	}
	b.rememberLocked(conv, p.batch)
	if st == AnswerTimeout {
		m := b.closed[conv]
		m.unanswered = true
		b.closed[conv] = m
	}
}

// ExpiredUnanswered reports whether conv's last question timed out without
// an answer recently, so the next channel message there may be a late
// answer that deserves to be told it expired.
func (b *Broker) ExpiredUnanswered(conv string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, ok := b.closed[conv]
	return ok && m.unanswered && b.pending[conv] == nil && b.clk.Now().Sub(m.at) <= closedMemory
}

// ForgetExpired drops conv's memory of an expired question once the late
// reply was told, so later messages are ordinary again.
func (b *Broker) ForgetExpired(conv string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m, ok := b.closed[conv]; ok && m.unanswered {
		m.unanswered = false
		b.closed[conv] = m
	}
}

func (b *Broker) remember(conv, batch string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.rememberLocked(conv, batch)
}

func (b *Broker) rememberLocked(conv, batch string) {
	now := b.clk.Now()
	if len(b.closed) >= closedMax {
		for k, m := range b.closed {
			if now.Sub(m.at) > closedMemory || len(b.closed) >= closedMax {
				delete(b.closed, k)
			}
		}
	}
	b.closed[conv] = closedMark{batch: batch, at: now}
}

func (b *Broker) emit(ctx context.Context, r Route, p *pendingAsk) {
	now := b.clk.Now()
	if b.notify != nil {
		b.notify(r.Conversation, p.request(now))
	}
	// The TUI renders clarify.request itself; every other channel gets text.
	if b.post != nil && r.Channel != "" && r.Channel != "tui" {
		if err := b.post(ctx, r.Channel, r.ChatID, RenderChannelText(p.q, p.index, p.total, p.deadline.Sub(now))); err != nil {
			b.log.Warn("ask_user: post question", "conversation", r.Conversation, "channel", r.Channel, "err", err)
		}
	}
}

// PendingFor reports whether conv has a question waiting, so the gateway's
// inbound dispatch routes the next message to ReplyText instead of a turn.
func (b *Broker) PendingFor(conv string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pending[conv] != nil
}

// Response is a clarify.respond answer from a TUI.
type Response struct {
	// Batch, when set, must name the pending call.
	Batch string
	// Index, when set, must name the pending question of the call.
	Index *int
	// Choice selects by 0-based index; Label selects by name.
	Choice *int
	Label  string
	// Text is the free-form answer, or a note beside a selection.
	Text string
}

// Reply answers conv's pending question from clarify.respond. A reply to a
// call that already ended returns ErrExpired.
func (b *Broker) Reply(conv string, r Response) error {
	return b.answer(conv, r.Batch, func(p *pendingAsk) (Answer, error) {
		if r.Index != nil && *r.Index != p.index {
			return Answer{}, newErr(CodeConflict, "index_mismatch", "question %d is pending, not %d", p.index, *r.Index)
		}
		a := Answer{Question: p.q.Question, Status: AnswerGiven, ChoiceIndex: -1, Text: strings.TrimSpace(r.Text)}
		switch {
		case r.Choice != nil && r.Label != "":
			return Answer{}, invalid("give choice or label, not both")
		case r.Choice != nil:
			if *r.Choice < 0 || *r.Choice >= len(p.q.Choices) {
				return Answer{}, invalid("choice %d out of range", *r.Choice)
			}
			a.ChoiceIndex = *r.Choice
		case r.Label != "":
			if a.ChoiceIndex = choiceIndex(p.q.Choices, r.Label); a.ChoiceIndex < 0 {
				return Answer{}, invalid("no choice named %q", r.Label)
			}
		case a.Text == "":
			return Answer{}, invalid("empty answer")
		}
		if a.ChoiceIndex >= 0 {
			a.Choice = p.q.Choices[a.ChoiceIndex]
		}
		return a, nil
	})
}

// ReplyText answers conv's pending question with an inbound channel message.
// It returns ErrNotAnswer for a /command (handle it as an ordinary message)
// and ErrExpired when the question ended in the meantime.
func (b *Broker) ReplyText(conv, text string) error {
	return b.answer(conv, "", func(p *pendingAsk) (Answer, error) {
		return parseChannelAnswer(p.q, text)
	})
}

func (b *Broker) answer(conv, batch string, parse func(*pendingAsk) (Answer, error)) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.pending[conv]
	if p == nil || (batch != "" && batch != p.batch) {
		if m, ok := b.closed[conv]; ok && (batch == "" || batch == m.batch) && b.clk.Now().Sub(m.at) <= closedMemory {
			return newErr(CodeExpired, "", "the question on %s is no longer waiting for an answer", conv)
		}
		return newErr(CodeNotFound, "", "no question pending on %s", conv)
	}
	a, err := parse(p)
	if err != nil {
		return err
	}
	p.state, p.ans = AnswerGiven, a
	close(p.done)
	delete(b.pending, conv)
	return nil
}
