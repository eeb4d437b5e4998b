package runtime

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/llm/openai"
	"github.com/raven-agent/raven/internal/spine"
)

// firstDelta is a streaming surface that reports its first delta of each
// turn.
type firstDelta struct{ got chan struct{} }

func (f *firstDelta) Deliver(context.Context, spine.Message) error { return nil }
func (f *firstDelta) Stream(context.Context, spine.Delta) {
	select {
	case f.got <- struct{}{}:
	default:
	}
}

const benchReply = "the quick brown fox jumps over the lazy dog"

// BenchmarkTTFTRawSDK is the provider's own time to first token: openai-go's
// NewStreaming against the fake model server, until the first content chunk.
func BenchmarkTTFTRawSDK(b *testing.B) {
	srv := fakeopenai.New(fakeopenai.Options{Default: fakeopenai.Always(fakeopenai.Text(benchReply))})
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c := oai.NewClient(option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("x"), option.WithHTTPClient(hc), option.WithMaxRetries(0))
	params := oai.ChatCompletionNewParams{Model: "fake", Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")}}
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		s := c.Chat.Completions.NewStreaming(context.Background(), params)
		for s.Next() {
			if ch := s.Current(); len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
				break
			}
		}
		total += time.Since(start)
		b.StopTimer()
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
		s.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs-ttft")
}

// BenchmarkTTFTProvider is the same request through Raven's provider with
// a delta sink: NewStreaming, the accumulator and the delta conversion,
// until the first delta reaches the sink. Its difference from
// BenchmarkTTFTRawSDK is the delta path's own share of time to first token.
func BenchmarkTTFTProvider(b *testing.B) {
	srv := fakeopenai.New(fakeopenai.Options{Default: fakeopenai.Always(fakeopenai.Text(benchReply))})
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	prov, err := openai.New(openai.Config{Model: "fake", BaseURL: srv.BaseURL(), APIKey: "x", HTTPClient: hc})
	if err != nil {
		b.Fatal(err)
	}
	hub := spine.NewHub(nil)
	ss := newSurfaces()
	hub.Register(CLIChannel, surfaceOutlet{ss})
	ss.attach(CLIConversation, channels.NewStreamingCLI(io.Discard, channels.CLIStream{}))
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "hi"}}
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		var first time.Time
		start := time.Now()
		_, err := prov.Chat(context.Background(), llm.Request{Messages: msgs, OnDelta: func(d llm.Delta) {
			hub.Stream(context.Background(), spine.Delta{Channel: CLIChannel, ChatID: CLIChatID, Text: d.Text})
			if first.IsZero() {
				first = time.Now()
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		total += first.Sub(start)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs-ttft")
}

// BenchmarkTTFTOverhead alternates the raw SDK call and the same call
// through Raven's provider and delta path to the terminal outlet, on one
// server and client, so machine load hits both alike; it reports each
// one's mean time to first token and their difference (the figure the
// issue asks for: goal < 1 ms).
func BenchmarkTTFTOverhead(b *testing.B) {
	srv := fakeopenai.New(fakeopenai.Options{Default: fakeopenai.Always(fakeopenai.Text(benchReply))})
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c := oai.NewClient(option.WithBaseURL(srv.BaseURL()), option.WithAPIKey("x"), option.WithHTTPClient(hc), option.WithMaxRetries(0))
	prov, err := openai.New(openai.Config{Model: "fake", BaseURL: srv.BaseURL(), APIKey: "x", HTTPClient: hc})
	if err != nil {
		b.Fatal(err)
	}
	hub := spine.NewHub(nil)
	ss := newSurfaces()
	hub.Register(CLIChannel, surfaceOutlet{ss})
	ss.attach(CLIConversation, channels.NewStreamingCLI(io.Discard, channels.CLIStream{}))
	// The same body both ways: Raven asks for usage in the stream.
	params := oai.ChatCompletionNewParams{Model: "fake", Messages: []oai.ChatCompletionMessageParamUnion{oai.UserMessage("hi")},
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)}}
	msgs := []llm.Message{{Role: llm.RoleUser, Content: "hi"}}
	rawCall := func() time.Duration {
		start := time.Now()
		s := c.Chat.Completions.NewStreaming(context.Background(), params)
		for s.Next() {
			if ch := s.Current(); len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != "" {
				break
			}
		}
		d := time.Since(start)
		for s.Next() {
		}
		if err := s.Err(); err != nil {
			b.Fatal(err)
		}
		s.Close()
		return d
	}
	ravenCall := func() time.Duration {
		var first time.Time
		start := time.Now()
		_, err := prov.Chat(context.Background(), llm.Request{Messages: msgs, OnDelta: func(d llm.Delta) {
			hub.Stream(context.Background(), spine.Delta{Channel: CLIChannel, ChatID: CLIChatID, Text: d.Text})
			if first.IsZero() {
				first = time.Now()
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		return first.Sub(start)
	}
	var raw, rav time.Duration
	odd := false
	for b.Loop() {
		// Alternate which goes first: the second call finds a warmer
		// connection and caches.
		if odd {
			rav += ravenCall()
			raw += rawCall()
		} else {
			raw += rawCall()
			rav += ravenCall()
		}
		odd = !odd
	}
	n := float64(b.N)
	b.ReportMetric(float64(raw.Microseconds())/n, "µs-raw-ttft")
	b.ReportMetric(float64(rav.Microseconds())/n, "µs-raven-ttft")
	b.ReportMetric(float64((rav-raw).Microseconds())/n, "µs-overhead")
}

// BenchmarkTTFTRaven is the same model call made by a user turn of the
// assembled runtime (default config), until the first delta reaches the
// attached surface: the provider's stream, accumulator, agent sink, hub and
// surface fan-out, plus the turn's start (prompt, session read).
func BenchmarkTTFTRaven(b *testing.B) {
	srv := fakeopenai.New(fakeopenai.Options{Default: fakeopenai.Always(fakeopenai.Text(benchReply))})
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	prov, err := openai.New(openai.Config{Model: "fake", BaseURL: srv.BaseURL(), APIKey: "x", HTTPClient: hc})
	if err != nil {
		b.Fatal(err)
	}
	p, err := config.NewPaths(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.Agent.RecentMessages = 0 // every turn the same prompt, as the raw call
	rt, err := Build(context.Background(), Options{Paths: p, Config: cfg, Clock: clock.NewFake(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)), Provider: prov})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(context.Background())
	surf := &firstDelta{got: make(chan struct{}, 1)}
	detach, err := rt.Attach(context.Background(), CLIConversation, surf)
	if err != nil {
		b.Fatal(err)
	}
	defer detach()
	b.ReportAllocs()
	var total time.Duration
	for b.Loop() {
		start := time.Now()
		tk, err := rt.Scheduler().Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: CLIChannel, ChatID: CLIChatID, Content: "hi"})
		if err != nil {
			b.Fatal(err)
		}
		<-surf.got
		total += time.Since(start)
		b.StopTimer()
		if res, err := tk.Wait(context.Background()); err != nil || res.Err != nil {
			b.Fatal(err, res.Err)
		}
		select { // the later deltas of this turn
		case <-surf.got:
		default:
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs-ttft")
}

// BenchmarkDeltaPath is the cost of one text delta from the agent's sink
// to the terminal: hub lookup, the surfaces attached to the conversation,
// the CLI outlet's write.
func BenchmarkDeltaPath(b *testing.B) {
	hub := spine.NewHub(nil)
	ss := newSurfaces()
	hub.Register(CLIChannel, surfaceOutlet{ss})
	ss.attach(CLIConversation, channels.NewStreamingCLI(io.Discard, channels.CLIStream{}))
	d := spine.Delta{Channel: CLIChannel, ChatID: CLIChatID, Text: "word "}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		hub.Stream(ctx, d)
	}
}
