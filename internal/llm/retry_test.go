package llm_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
)

var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

// stubProvider fails with errs[i] on call i, then succeeds.
type stubProvider struct {
	errs  []error
	calls atomic.Int32
}

func (s *stubProvider) Name() string { return "stub/model" }

func (s *stubProvider) Chat(ctx context.Context, _ llm.Request) (*llm.Response, error) {
	n := int(s.calls.Add(1)) - 1
	if n < len(s.errs) && s.errs[n] != nil {
		return nil, s.errs[n]
	}
	return &llm.Response{Content: "ok"}, nil
}

func apiErr(status int, retryAfter string) error {
	return &llm.APIError{Provider: "stub", URL: "http://stub/chat", StatusCode: status, Message: http.StatusText(status), RetryAfter: retryAfter}
}

// expectWait checks that exactly one wait of d is pending on fc, then lets it fire.
func expectWait(t *testing.T, fc *clock.Fake, d time.Duration) {
	t.Helper()
	fc.BlockUntil(1)
	fc.Advance(d - time.Nanosecond)
	if fc.Waiters() != 1 {
		t.Fatalf("wait ended before %v", d)
	}
	fc.Advance(time.Nanosecond)
	if fc.Waiters() != 0 {
		t.Fatalf("wait did not end at %v", d)
	}
}

type result struct {
	resp *llm.Response
	err  error
}

func chatAsync(p llm.Provider, ctx context.Context) <-chan result {
	ch := make(chan result, 1)
	go func() {
		resp, err := p.Chat(ctx, llm.Request{})
		ch <- result{resp, err}
	}()
	return ch
}

func TestWithRetryWaits(t *testing.T) {
	tests := []struct {
		name      string
		errs      []error
		waits     []time.Duration
		wantErr   int // expected final APIError status, 0 for success
		wantCalls int32
	}{
		{"429 honours Retry-After seconds", []error{apiErr(429, "7")}, []time.Duration{7 * time.Second}, 0, 2},
		{"Retry-After HTTP date", []error{apiErr(503, t0.Add(45*time.Second).Format(http.TimeFormat))}, []time.Duration{45 * time.Second}, 0, 2},
		{"Retry-After capped", []error{apiErr(429, "3600")}, []time.Duration{llm.DefaultMaxRetryAfter}, 0, 2},
		{"500 backs off exponentially with jitter", []error{apiErr(500, ""), apiErr(502, ""), apiErr(500, "")},
			[]time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second}, 0, 4},
		{"unreachable is retried", []error{apiErr(0, "")}, []time.Duration{750 * time.Millisecond}, 0, 2},
		{"exhausts attempts", []error{apiErr(500, ""), apiErr(500, ""), apiErr(500, ""), apiErr(500, "")},
			[]time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second}, 500, 4},
		{"400 is not retried", []error{apiErr(400, "")}, nil, 400, 1},
		{"200 with malformed body is not retried", []error{apiErr(200, "")}, nil, 200, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := clock.NewFake(t0)
			stub := &stubProvider{errs: tt.errs}
			p := llm.WithRetry(stub, llm.RetryConfig{MaxAttempts: 4, Clock: fc, Jitter: func() float64 { return 0.5 }})
			done := chatAsync(p, context.Background())
			for _, w := range tt.waits {
				expectWait(t, fc, w)
			}
			r := <-done
			if got := stub.calls.Load(); got != tt.wantCalls {
				t.Errorf("calls = %d, want %d", got, tt.wantCalls)
			}
			if tt.wantErr == 0 {
				if r.err != nil || r.resp.Content != "ok" {
					t.Fatalf("got %v, %v; want success", r.resp, r.err)
				}
				return
			}
			var ae *llm.APIError
			if !errors.As(r.err, &ae) || ae.StatusCode != tt.wantErr {
				t.Fatalf("err = %v, want APIError %d", r.err, tt.wantErr)
			}
			if gaveUp := strings.Contains(r.err.Error(), "gave up after 4 attempts"); gaveUp != (tt.wantCalls == 4) {
				t.Errorf("err = %q: attempts reported wrongly", r.err)
			}
		})
	}
}

func TestWithRetryDefaultsToThreeAttempts(t *testing.T) {
	fc := clock.NewFake(t0)
	stub := &stubProvider{errs: []error{apiErr(500, "1"), apiErr(500, "1"), apiErr(500, "1"), nil}}
	p := llm.WithRetry(stub, llm.RetryConfig{Clock: fc})
	done := chatAsync(p, context.Background())
	expectWait(t, fc, time.Second)
	expectWait(t, fc, time.Second)
	r := <-done
	if r.err == nil || stub.calls.Load() != 3 {
		t.Fatalf("err = %v after %d calls, want failure after 3", r.err, stub.calls.Load())
	}
}

func TestWithRetryStopsWhenContextEnds(t *testing.T) {
	fc := clock.NewFake(t0)
	stub := &stubProvider{errs: []error{apiErr(429, "30")}}
	p := llm.WithRetry(stub, llm.RetryConfig{Clock: fc})
	ctx, cancel := context.WithCancel(context.Background())
	done := chatAsync(p, ctx)
	fc.BlockUntil(1)
	cancel()
	r := <-done // no Advance: only cancellation can end the wait
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err = %v, want Canceled", r.err)
	}
	var ae *llm.APIError
	if !errors.As(r.err, &ae) || ae.StatusCode != 429 {
		t.Errorf("err = %v, want it to carry the 429 that caused the wait", r.err)
	}
	if stub.calls.Load() != 1 {
		t.Errorf("calls = %d, want 1", stub.calls.Load())
	}
}

func TestWithRetryDoesNotRetryOtherErrors(t *testing.T) {
	stub := &stubProvider{errs: []error{errors.New("bad request shape")}}
	p := llm.WithRetry(stub, llm.RetryConfig{Clock: clock.NewFake(t0)})
	if _, err := p.Chat(context.Background(), llm.Request{}); err == nil || stub.calls.Load() != 1 {
		t.Fatalf("err = %v after %d calls", err, stub.calls.Load())
	}
	if p.Name() != "stub/model" {
		t.Errorf("Name = %q", p.Name())
	}
}

func TestParseRetryAfter(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"0", 0, true},
		{" 12 ", 12 * time.Second, true},
		{"-3", 0, false},
		{"soon", 0, false},
		{"1.5", 0, false},
		{t0.Add(42 * time.Second).Format(http.TimeFormat), 42 * time.Second, true},
		{t0.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"99999999999999", 24 * time.Hour, true},
	}
	for _, tt := range tests {
		got, ok := llm.ParseRetryAfter(tt.in, t0)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// streamStub writes one delta, then fails with err on its first call, and
// streams "ok" after.
type streamStub struct {
	err   error
	calls atomic.Int32
}

func (s *streamStub) Name() string { return "stub/stream" }

func (s *streamStub) Chat(_ context.Context, req llm.Request) (*llm.Response, error) {
	if s.calls.Add(1) == 1 {
		req.OnDelta(llm.Delta{Text: "par"})
		return nil, s.err
	}
	req.OnDelta(llm.Delta{Text: "ok"})
	return &llm.Response{Content: "ok"}, nil
}

// TestWithRetryNotAfterFirstDelta: a retryable failure after the stream
// started is returned, not retried, so the caller never sees two beginnings.
func TestWithRetryNotAfterFirstDelta(t *testing.T) {
	stub := &streamStub{err: llm.StreamError(context.Background(), "stub", "http://stub/chat", errors.New("connection reset"))}
	p := llm.WithRetry(stub, llm.RetryConfig{Clock: clock.NewFake(t0)})
	var got []string
	_, err := p.Chat(context.Background(), llm.Request{OnDelta: func(d llm.Delta) { got = append(got, d.Text) }})
	var apiErr *llm.APIError
	if !errors.Is(err, llm.ErrStreamStarted) || !errors.Is(err, llm.ErrStreamBroken) || !errors.As(err, &apiErr) || !apiErr.Retryable() {
		t.Fatalf("err = %v", err)
	}
	if stub.calls.Load() != 1 || len(got) != 1 {
		t.Fatalf("%d calls, deltas %q", stub.calls.Load(), got)
	}
}
