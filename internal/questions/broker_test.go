package questions

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/tools"
)

type brokerHarness struct {
	clk      *clock.Fake
	b        *Broker
	requests chan ClarifyRequest
	mu       sync.Mutex
	posts    []string
}

func newBrokerHarness(t *testing.T) *brokerHarness {
	h := &brokerHarness{clk: clock.NewFake(t0), requests: make(chan ClarifyRequest, 16)}
	h.b = NewBroker(BrokerOptions{
		Clock:  h.clk,
		Notify: func(conv string, r ClarifyRequest) { h.requests <- r },
		Post: func(_ context.Context, ch, chat, text string) error {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.posts = append(h.posts, ch+"|"+chat+"|"+text)
			return nil
		},
	})
	return h
}

type askResult struct {
	answers []Answer
	err     error
}

func (h *brokerHarness) askAsync(ctx context.Context, conv string, qs []Question, budget time.Duration) chan askResult {
	out := make(chan askResult, 1)
	go func() {
		a, err := h.b.Ask(ctx, conv, qs, budget)
		out <- askResult{a, err}
	}()
	return out
}

func (h *brokerHarness) next(t *testing.T) ClarifyRequest {
	t.Helper()
	select {
	case r := <-h.requests:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no clarify.request")
		return ClarifyRequest{}
	}
}

var threeQs = []Question{
	{Question: "Which database?", Header: "DB", Choices: []string{"sqlite", "postgres"}, Recommended: "sqlite"},
	{Question: "Deploy today?", Choices: []string{"yes", "no"}},
	{Question: "Anything else?"},
}

func TestBatchSharesOneBudget(t *testing.T) {
	h := newBrokerHarness(t)
	res := h.askAsync(context.Background(), "telegram:42", threeQs, time.Minute)
	r0 := h.next(t)
	if r0.Index != 0 || r0.Total != 3 || r0.TimeoutS != 60 || r0.Recommended != "sqlite" || r0.Header != "DB" {
		t.Fatalf("first request = %+v", r0)
	}
	h.clk.Advance(20 * time.Second)
	if err := h.b.Reply("telegram:42", Response{Batch: r0.Batch, Label: "postgres"}); err != nil {
		t.Fatal(err)
	}
	r1 := h.next(t)
	if r1.Index != 1 || r1.Batch != r0.Batch || r1.TimeoutS != 40 {
		t.Fatalf("second request = %+v, want 40 s left of the shared budget", r1)
	}
	// One timer for the whole call: exactly the rest of the budget ends it.
	h.clk.Advance(40*time.Second - time.Millisecond)
	select {
	case <-res:
		t.Fatal("call ended before its budget")
	default:
	}
	h.clk.Advance(time.Millisecond)
	got := <-res
	if got.err != nil {
		t.Fatal(got.err)
	}
	want := []AnswerStatus{AnswerGiven, AnswerTimeout, AnswerTimeout}
	for i, a := range got.answers {
		if a.Status != want[i] {
			t.Fatalf("answer %d = %+v, want %s", i, a, want[i])
		}
	}
	if got.answers[0].Choice != "postgres" || got.answers[0].ChoiceIndex != 1 {
		t.Fatalf("first answer = %+v", got.answers[0])
	}
	if got.answers[1].Choice != "" || got.answers[1].ChoiceIndex != -1 {
		t.Fatalf("timed-out answer claims a choice: %+v", got.answers[1])
	}
	if h.b.PendingFor("telegram:42") {
		t.Fatal("question still pending after the budget")
	}
}

func TestClarifyRequestWireFields(t *testing.T) {
	b, _ := json.Marshal(ClarifyRequest{})
	var m map[string]any
	json.Unmarshal(b, &m)
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"batch", "choices", "header", "index", "question", "recommended", "timeout_s", "total"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("clarify.request fields = %v, want %v", keys, want)
	}
}

func TestChannelRouteAnswers(t *testing.T) {
	q := []Question{{Question: "Which database?", Header: "DB", Choices: []string{"sqlite", "postgres"}, Recommended: "postgres"}}
	tests := []struct {
		name       string
		msgs       []string
		notAnswers int
		choice     string
		text       string
	}{
		{name: "number picks", msgs: []string{"2"}, choice: "postgres"},
		{name: "label picks", msgs: []string{"  SQLite "}, choice: "sqlite"},
		{name: "other text is free-form", msgs: []string{"whatever is cheaper"}, text: "whatever is cheaper"},
		{name: "out of range number is free-form", msgs: []string{"3"}, text: "3"},
		{name: "slash command is not an answer", msgs: []string{"/status", "1"}, notAnswers: 1, choice: "sqlite"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newBrokerHarness(t)
			res := h.askAsync(context.Background(), "telegram:42", q, time.Minute)
			h.next(t)
			if !h.b.PendingFor("telegram:42") || h.b.PendingFor("telegram:43") {
				t.Fatal("PendingFor wrong")
			}
			notAnswers := 0
			for _, m := range tt.msgs {
				err := h.b.ReplyText("telegram:42", m)
				if errors.Is(err, ErrNotAnswer) {
					notAnswers++
					if !h.b.PendingFor("telegram:42") {
						t.Fatal("a /command consumed the question")
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			got := <-res
			if notAnswers != tt.notAnswers {
				t.Fatalf("not-answers = %d", notAnswers)
			}
			a := got.answers[0]
			if a.Status != AnswerGiven || a.Choice != tt.choice || a.Text != tt.text {
				t.Fatalf("answer = %+v", a)
			}
		})
	}
}

func TestChannelRendering(t *testing.T) {
	h := newBrokerHarness(t)
	q := []Question{{Question: "Which database?", Header: "DB", Choices: []string{"sqlite", "postgres"}, Recommended: "postgres"}, {Question: "Why?"}}
	res := h.askAsync(context.Background(), "telegram:42", q, 10*time.Minute)
	h.next(t)
	h.b.ReplyText("telegram:42", "2")
	h.next(t)
	h.b.ReplyText("telegram:42", "cost")
	<-res
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.posts) != 2 {
		t.Fatalf("posts = %q", h.posts)
	}
	first := h.posts[0]
	for _, want := range []string{"telegram|42|", "[DB]", "1 of 2", "1. sqlite\n", "2. postgres  (recommended)", "Reply with a number (1-2)", "10 min"} {
		if !strings.Contains(first, want) {
			t.Errorf("rendering lacks %q:\n%s", want, first)
		}
	}
	// The TUI gets only the structured notification.
	th := newBrokerHarness(t)
	tres := th.askAsync(context.Background(), "tui:main", q[:1], time.Minute)
	th.next(t)
	th.b.Reply("tui:main", Response{Choice: new(int)})
	<-tres
	if len(th.posts) != 0 {
		t.Fatalf("tui question posted as text: %q", th.posts)
	}
}

func TestLateAnswerExpired(t *testing.T) {
	h := newBrokerHarness(t)
	res := h.askAsync(context.Background(), "telegram:42", threeQs[:1], time.Minute)
	r := h.next(t)
	h.clk.BlockUntil(1)
	h.clk.Advance(time.Minute)
	<-res
	err := h.b.Reply("telegram:42", Response{Batch: r.Batch, Text: "sqlite"})
	wantCode(t, err, CodeExpired)
	wantCode(t, h.b.ReplyText("telegram:42", "1"), CodeExpired)
	wantCode(t, h.b.ReplyText("telegram:99", "1"), CodeNotFound)
	// The channel route asks whether the next message may be a late answer:
	// yes once, until the late reply was told.
	if !h.b.ExpiredUnanswered("telegram:42") || h.b.ExpiredUnanswered("telegram:99") {
		t.Fatal("ExpiredUnanswered does not track the timed-out question")
	}
	h.b.ForgetExpired("telegram:42")
	if h.b.ExpiredUnanswered("telegram:42") {
		t.Fatal("ExpiredUnanswered still true after ForgetExpired")
	}
	// A reply aimed at the old call never answers a newer one.
	res2 := h.askAsync(context.Background(), "telegram:42", threeQs[:1], time.Minute)
	h.next(t)
	wantCode(t, h.b.Reply("telegram:42", Response{Batch: r.Batch, Text: "x"}), CodeExpired)
	if !h.b.PendingFor("telegram:42") {
		t.Fatal("stale reply consumed the new question")
	}
	h.b.ReplyText("telegram:42", "1")
	<-res2
}

func TestOverlappingAskSupersedesStale(t *testing.T) {
	h := newBrokerHarness(t)
	old := h.askAsync(context.Background(), "tui:main", threeQs, time.Hour)
	h.next(t)
	fresh := h.askAsync(context.Background(), "tui:main", threeQs[:1], time.Hour)
	got := <-old
	if got.err != nil {
		t.Fatal(got.err)
	}
	for _, a := range got.answers {
		if a.Status != AnswerSuperseded {
			t.Fatalf("stale answers = %+v", got.answers)
		}
	}
	r := h.next(t)
	if err := h.b.Reply("tui:main", Response{Batch: r.Batch, Choice: new(int), Text: "but check costs"}); err != nil {
		t.Fatal(err)
	}
	a := (<-fresh).answers[0]
	if a.Choice != "sqlite" || a.Text != "but check costs" {
		t.Fatalf("selection with note = %+v", a)
	}
}

func TestReplyValidation(t *testing.T) {
	h := newBrokerHarness(t)
	res := h.askAsync(context.Background(), "tui:main", threeQs[:1], time.Hour)
	r := h.next(t)
	five, one := 5, 1
	wantCode(t, h.b.Reply("tui:main", Response{Choice: &five}), CodeInvalidParams)
	wantCode(t, h.b.Reply("tui:main", Response{Label: "oracle"}), CodeInvalidParams)
	wantCode(t, h.b.Reply("tui:main", Response{}), CodeInvalidParams)
	wantCode(t, h.b.Reply("tui:main", Response{Index: &one, Text: "x"}), CodeConflict)
	if err := h.b.Reply("tui:main", Response{Batch: r.Batch, Index: new(int), Text: "neither"}); err != nil {
		t.Fatal(err)
	}
	if a := (<-res).answers[0]; a.Text != "neither" || a.ChoiceIndex != -1 {
		t.Fatalf("free text = %+v", a)
	}
}

func TestAskUserToolTimeoutWording(t *testing.T) {
	h := newBrokerHarness(t)
	tool := NewAskUserTool(h.b, 90*time.Second)
	ctx := tools.WithTurn(context.Background(), tools.TurnInfo{Conversation: "telegram:42", Channel: "telegram", ChatID: "42"})
	out := make(chan string, 1)
	go func() {
		s, err := tool.Run(ctx, json.RawMessage(`{"questions":[{"question":"Which database?","choices":["sqlite","postgres"],"recommended":"sqlite"}]}`))
		if err != nil {
			s = "error: " + err.Error()
		}
		out <- s
	}()
	h.next(t)
	h.clk.BlockUntil(1)
	h.clk.Advance(90 * time.Second)
	s := <-out
	if !strings.Contains(s, "did not answer") || !strings.Contains(s, "do not assume the recommended") || strings.Contains(s, "Owner chose") {
		t.Fatalf("timeout result = %q", s)
	}
}

func TestAskUserToolWaitIgnoresWorkDeadline(t *testing.T) {
	h := newBrokerHarness(t)
	tool := NewAskUserTool(h.b, time.Hour)
	base := tools.WithTurn(context.Background(), tools.TurnInfo{Conversation: "tui:main", Channel: "tui", ChatID: "main"})
	// A work timeout that has already passed must not cut the wait short.
	ctx, cancel := context.WithDeadline(base, t0.Add(-time.Hour))
	defer cancel()
	out := make(chan string, 1)
	go func() {
		s, _ := tool.Run(ctx, json.RawMessage(`{"questions":[{"question":"Go?","choices":["yes","no"]}]}`))
		out <- s
	}()
	h.next(t)
	if err := h.b.Reply("tui:main", Response{Label: "yes"}); err != nil {
		t.Fatal(err)
	}
	if s := <-out; !strings.Contains(s, "Owner chose: yes") {
		t.Fatalf("result = %q", s)
	}
	// A real cancellation (turn interrupted) still ends the wait.
	ctx2, cancel2 := context.WithCancel(base)
	errc := make(chan error, 1)
	go func() {
		_, err := tool.Run(ctx2, json.RawMessage(`{"questions":[{"question":"Go?"}]}`))
		errc <- err
	}()
	h.next(t)
	cancel2()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if h.b.PendingFor("tui:main") {
		t.Fatal("cancelled question still pending")
	}
}

func TestAskUserToolStrictArgs(t *testing.T) {
	h := newBrokerHarness(t)
	tool := NewAskUserTool(h.b, time.Minute)
	ctx := tools.WithTurn(context.Background(), tools.TurnInfo{Conversation: "tui:main"})
	q := `{"question":"q"}`
	tests := map[string]string{
		"unknown top field":      `{"questions":[` + q + `],"urgent":true}`,
		"unknown question field": `{"questions":[{"question":"q","multi":true}]}`,
		"no questions":           `{"questions":[]}`,
		"six questions":          `{"questions":[` + strings.Repeat(q+",", 5) + q + `]}`,
		"nine choices":           `{"questions":[{"question":"q","choices":["a","b","c","d","e","f","g","h","i"]}]}`,
		"oversize question":      `{"questions":[{"question":"` + strings.Repeat("x", MaxQuestionLen+1) + `"}]}`,
		"oversize header":        `{"questions":[{"question":"q","header":"` + strings.Repeat("h", MaxHeaderLen+1) + `"}]}`,
		"recommended not choice": `{"questions":[{"question":"q","choices":["a"],"recommended":"b"}]}`,
		"duplicate choices":      `{"questions":[{"question":"q","choices":["a","A"]}]}`,
		"empty question":         `{"questions":[{"question":"  "}]}`,
		"wrong type":             `{"questions":"q"}`,
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := tool.Run(ctx, json.RawMessage(args))
			wantCode(t, err, CodeInvalidParams)
		})
	}
	if h.b.PendingFor("tui:main") {
		t.Fatal("invalid call left a question pending")
	}
	_, err := tool.Run(context.Background(), json.RawMessage(`{"questions":[`+q+`]}`))
	wantCode(t, err, CodeUnavailable)
}

func TestClarifyRespondHandler(t *testing.T) {
	ctrl := &fakeControllers{leases: map[string]string{"tui:main": "tablet"}}
	tests := []struct {
		name   string
		p      auth.Principal
		params string
		code   string
	}{
		{"unknown field", operator, `{"conversation":"tui:main","text":"x","extra":1}`, CodeInvalidParams},
		{"oversize text", operator, `{"conversation":"tui:main","text":"` + strings.Repeat("t", MaxAnswerTextLen+1) + `"}`, CodeInvalidParams},
		{"empty", operator, `{"conversation":"tui:main"}`, CodeInvalidParams},
		{"bad batch", operator, `{"conversation":"tui:main","batch":"b1","text":"x"}`, CodeInvalidParams},
		{"captain", captain, `{"conversation":"tui:main","text":"x"}`, CodeForbidden},
		{"read-only device", viewer, `{"conversation":"tui:main","text":"x"}`, CodeForbidden},
		{"device without control", phone, `{"conversation":"tui:main","text":"x"}`, CodeForbidden},
		{"controlling device", tablet, `{"conversation":"tui:main","choice":1}`, ""},
		{"operator", operator, `{"conversation":"tui:main","label":"no","text":"not yet"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bh := newBrokerHarness(t)
			hd := &ClarifyHandler{Broker: bh.b, Authority: Authority{Controllers: ctrl}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := bh.askAsync(ctx, "tui:main", threeQs[1:2], time.Hour)
			bh.next(t)
			err := strictly(context.Background(), tt.p, []byte(tt.params), hd.Respond)
			if tt.code != "" {
				wantCode(t, err, tt.code)
				cancel()
				<-res
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if a := (<-res).answers[0]; a.Status != AnswerGiven || a.Choice != "no" {
				t.Fatalf("answer = %+v", a)
			}
		})
	}
}
