package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/statefile"
)

// ErrAlreadyRunning is returned when another gateway holds the data dir.
var ErrAlreadyRunning = errors.New("gateway: already running")

// DaemonOptions configure Run.
type DaemonOptions struct {
	Options
	Version string
	// Ready, when set, is called once the control socket accepts calls.
	Ready func(startup time.Duration)
	// TelegramServerURL overrides the Bot API URL (tests).
	TelegramServerURL string
}

// Gateway is a running daemon's handles, for tests and the demo.
type Gateway struct {
	App       *App
	Auth      *auth.Store
	Events    *eventlog.Log
	Questions *questions.Store
	Control   *controlapi.Server
	Inbound   *channels.Dispatcher
	attached  *attachments
	// inbound ends the channels' receive loops (Telegram polling, the
	// webhook listener) before the scheduler drains, so no message is
	// acknowledged that could no longer be run.
	inbound     context.Context
	stopInbound context.CancelFunc
}

// Run is `raven gateway`: it takes the single-instance lock, starts every
// service, serves the control API until ctx ends, then shuts down gracefully:
// stop accepting, let running turns finish within the grace period, cancel
// the rest, persist, exit.
func Run(ctx context.Context, o DaemonOptions) error {
	start := time.Now()
	lock := statefile.NewLock(o.Paths.GatewayLock())
	ok, err := lock.TryAcquire()
	if err != nil {
		return err
	}
	if !ok {
		pid := readPID(o.Paths.GatewayLock())
		return fmt.Errorf("%w for %s (pid %s); stop it first or use another --data-dir", ErrAlreadyRunning, o.Paths.Root, pid)
	}
	defer lock.Release()
	if err := os.WriteFile(o.Paths.GatewayLock(), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fmt.Errorf("gateway: write pid: %w", err)
	}

	g, err := Start(ctx, o)
	if err != nil {
		return err
	}
	ln, err := controlapi.ListenUnix(o.Paths.Socket())
	if err != nil {
		g.shutdown(context.Background())
		return err
	}
	serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
	var serving sync.WaitGroup
	serve := func(ln net.Listener) {
		serving.Add(1)
		go func() {
			defer serving.Done()
			if err := g.Control.Serve(serveCtx, ln); err != nil && serveCtx.Err() == nil {
				g.App.Log.Error("control API stopped", "addr", ln.Addr(), "err", err)
			}
		}()
	}
	serve(ln)
	if gc := o.Config.Gateway; gc.TCPListen != "" {
		tln, err := controlapi.ListenTLS(gc.TCPListen, gc.TLSCert, gc.TLSKey)
		if err != nil {
			stopServe()
			serving.Wait()
			g.shutdown(context.Background())
			return err
		}
		serve(tln)
	}
	startup := time.Since(start)
	g.App.Log.Info("gateway ready", "socket", o.Paths.Socket(), "pid", os.Getpid(), "startup", startup.Round(time.Microsecond),
		"model", providerName(g.App), "sentinel", o.Config.Sentinel.Enabled)
	if o.Ready != nil {
		o.Ready(startup)
	}

	<-ctx.Done()
	g.App.Log.Info("gateway stopping", "grace", o.Config.Gateway.ShutdownGrace.D())
	stopServe() // stop accepting control-API connections
	serving.Wait()
	grace, cancel := context.WithTimeout(context.Background(), o.Config.Gateway.ShutdownGrace.D())
	defer cancel()
	err = g.shutdown(grace)
	os.Remove(o.Paths.Socket())
	g.App.Log.Info("gateway stopped")
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func providerName(a *App) string {
	if a.Provider == nil {
		return "none"
	}
	return a.Provider.Name()
}

func readPID(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// Start assembles and starts every gateway service except the listeners.
func Start(ctx context.Context, o DaemonOptions) (*Gateway, error) {
	app, err := New(ctx, o.Options)
	if err != nil {
		return nil, err
	}
	g := &Gateway{App: app, attached: newAttachments()}
	g.inbound, g.stopInbound = context.WithCancel(app.Context())
	if err := g.wire(ctx, o); err != nil {
		app.Close(context.Background())
		return nil, err
	}
	return g, nil
}

func (g *Gateway) shutdown(ctx context.Context) error {
	g.stopInbound()
	return g.App.Close(ctx)
}

// Shutdown stops a gateway made with Start.
func (g *Gateway) Shutdown(ctx context.Context) error { return g.shutdown(ctx) }

func (g *Gateway) wire(ctx context.Context, o DaemonOptions) error {
	a := g.App
	log := a.Log
	var err error
	if g.Auth, err = auth.NewStore(ctx, a.DB, a.Clock); err != nil {
		return err
	}
	if _, err := g.Auth.EnsureOperatorToken(ctx, a.Paths.OperatorToken()); err != nil {
		return err
	}
	gc := a.Config.Gateway
	if g.Events, err = eventlog.Open(ctx, a.DB, eventlog.Options{Clock: a.Clock, Logger: log.With("component", "events"),
		MaxCount: gc.EventsMaxCount, MaxAge: gc.EventsMaxAge.D()}); err != nil {
		return err
	}
	a.AddCloser(func(context.Context) error { g.Events.Close(); return nil })
	g.recordEvents()

	// Control API.
	g.Control = controlapi.NewServer(controlapi.Options{Auth: g.Auth, Clock: a.Clock, Logger: log.With("component", "controlapi")})
	g.Control.RegisterBuiltins(controlapi.Builtins{Leases: g.Auth, Events: g.Events, Version: o.Version, Status: g.status})

	// ask_user: clarify.request goes to the TUI clients attached to the
	// conversation; chat channels get the question rendered as text.
	broker := a.EnableAskUser(func(conv string, req questions.ClarifyRequest) {
		g.attached.notify(conv, "clarify.request", req)
	})
	authority := questions.Authority{Controllers: g.Auth, Credentials: credentialGenerations{g.Auth}}
	clarify := &questions.ClarifyHandler{Broker: broker, Authority: authority}
	g.Control.Handle("clarify.respond", controlapi.Control, func(ctx context.Context, c *controlapi.Call) (any, error) {
		return rpcErr(clarify.ClarifyRespond(ctx, c.Principal, c.Params))
	})

	// Durable owner questions.
	if g.Questions, err = questions.OpenStore(ctx, a.DB, questions.StoreOptions{
		Clock: a.Clock, Logger: log.With("component", "questions"),
		Emit: func(ctx context.Context, kind, conv string, payload any) error {
			_, err := g.Events.Append(ctx, kind, conv, payload)
			return err
		},
		Continue:  g.continueAnswer,
		Authority: authority,
	}); err != nil {
		return err
	}
	if rep, err := g.Questions.Recover(ctx); err != nil {
		return err
	} else {
		log.Info("owner questions recovered", "report", fmt.Sprintf("%+v", rep))
	}
	for method, h := range map[string]func(context.Context, auth.Principal, json.RawMessage) (any, error){
		"input_get": g.Questions.InputGet, "input_answer": g.Questions.InputAnswer, "input_cancel": g.Questions.InputCancel,
	} {
		access := controlapi.Control
		if method == "input_get" {
			access = controlapi.Read
		}
		h := h
		g.Control.Handle(method, access, func(ctx context.Context, c *controlapi.Call) (any, error) {
			return rpcErr(h(ctx, c.Principal, c.Params))
		})
	}
	a.Tools.Register(questions.NewQuestionTool(g.Questions))

	// The proactive services. The task-discovery pick consumer is an
	// agent inbound hook (StartSentinel), so it runs once, for every surface.
	sys, err := a.StartSentinel(ctx)
	if err != nil {
		return err
	}
	if _, err := a.StartHeartbeat(); err != nil {
		return err
	}
	if err := a.StartCron(ctx); err != nil {
		return err
	}
	a.StartTriggers(
		func(ctx context.Context) { sys.Runner.TickOnce(ctx) },
		func(ctx context.Context) { sys.Runner.RunDiscovery(ctx) },
	)

	// Inbound dispatch shared by every channel and chat.send.
	if g.Inbound, err = a.NewDispatcher(); err != nil {
		return err
	}
	a.Hub.Register(channels.TUIChannel, channels.NewTUI(func(ctx context.Context, m channels.ChatMessage) error {
		g.attached.notify(m.Conversation, channels.ChatMessageMethod, m)
		return nil
	}))
	a.Hub.Register(cliChannel, spine.OutletFunc(g.deliverCLI))
	g.Control.Handle("chat.send", controlapi.Control, g.chatSend)
	g.Control.Handle("chat.attach", controlapi.Read, g.chatAttach)
	return g.startChannels(o)
}

// cliChannel is the terminal chat's channel; its one conversation is
// cli:direct.
const (
	cliChannel = "cli"
	cliChatID  = "direct"
)

// deliverCLI forwards a message for the terminal to the `raven chat`
// sessions attached to its conversation (chat.attach). The terminal is a
// separate process, so with none attached the message reached nobody: the
// error says so, and a nudge is then not charged as delivered.
func (g *Gateway) deliverCLI(_ context.Context, m spine.Message) error {
	id := m.ChatID
	if id == "" {
		id = cliChatID // cron resolves cli with no known chat to the bare channel
	}
	conv := spine.ConversationKey(cliChannel, id)
	cm := channels.ChatMessage{Conversation: conv, Content: m.Content, Origin: string(m.Origin), Proactive: m.Proactive, Reply: m.Reply}
	if g.attached.notify(conv, channels.ChatMessageMethod, cm) == 0 {
		return fmt.Errorf("%w %q: no raven chat attached to %s", spine.ErrNoOutlet, cliChannel, conv)
	}
	return nil
}

// chatSendParams is the strict DTO of chat.send.
type chatSendParams struct {
	Conversation string `json:"conversation"`
	Text         string `json:"text"`
}

func (g *Gateway) chatSend(ctx context.Context, c *controlapi.Call) (any, error) {
	var p chatSendParams
	if err := controlapi.DecodeStrict(c.Params, &p); err != nil {
		return nil, err
	}
	ch, id, ok := spine.SplitConversationKey(p.Conversation)
	if !ok {
		return nil, controlapi.InvalidParams("conversation must be channel:chat_id")
	}
	if strings.TrimSpace(p.Text) == "" {
		return nil, controlapi.InvalidParams("text is empty")
	}
	out, _, err := g.Inbound.Dispatch(ctx, spine.TurnRequest{Origin: spine.OriginUser, Channel: ch, ChatID: id, Content: p.Text,
		Extras: map[string]any{"principal": c.Principal.Name}})
	if err != nil {
		return nil, err
	}
	return map[string]any{"outcome": out.String()}, nil
}

type chatAttachParams struct {
	Conversation string `json:"conversation"`
}

func (g *Gateway) chatAttach(ctx context.Context, c *controlapi.Call) (any, error) {
	var p chatAttachParams
	if err := controlapi.DecodeStrict(c.Params, &p); err != nil {
		return nil, err
	}
	if _, _, ok := spine.SplitConversationKey(p.Conversation); !ok {
		return nil, controlapi.InvalidParams("conversation must be channel:chat_id")
	}
	g.attached.attach(p.Conversation, c.Notifier())
	return map[string]any{"attached": p.Conversation}, nil
}

// continueAnswer submits the ANSWER-origin turn that continues a
// conversation after its owner answered a durable question, and records
// the run's end on the receipt.
func (g *Gateway) continueAnswer(ctx context.Context, conv, runID string, ans questions.OwnerAnswer) error {
	ch, id, ok := spine.SplitConversationKey(conv)
	if !ok {
		ch, id = "owner", conv
	}
	tk, err := g.App.Scheduler.Submit(spine.TurnRequest{Origin: spine.OriginAnswer, ConversationID: conv, Channel: ch, ChatID: id,
		Content: ans.Content(), Extras: map[string]any{"run_id": runID}})
	if err != nil {
		return err
	}
	g.App.GoUntilClose("answer-run", func(actx context.Context) error {
		res, err := tk.Wait(actx)
		if err != nil {
			return nil // shutting down: Recover marks it failed at next start
		}
		return g.Questions.FinishRun(context.WithoutCancel(actx), runID, res.Err)
	})
	return nil
}

// Status is the gateway's part of the gateway.status result.
type Status struct {
	DataDir         string   `json:"data_dir"`
	Model           string   `json:"model"`
	Channels        []string `json:"channels"`
	SentinelEnabled bool     `json:"sentinel_enabled"`
	UserBusy        bool     `json:"user_busy"`
}

func (g *Gateway) status(ctx context.Context) (any, error) {
	a := g.App
	return Status{DataDir: a.Paths.Root, Model: providerName(a), Channels: a.Hub.Channels(),
		SentinelEnabled: a.Config.Sentinel.Enabled, UserBusy: a.Scheduler.UserBusy()}, nil
}

// recordEvents appends the notable runtime events to the event log.
func (g *Gateway) recordEvents() {
	a := g.App
	emit := func(kind, conv string, payload any) {
		if _, err := g.Events.Append(a.ctx, kind, conv, payload); err != nil && a.ctx.Err() == nil {
			a.Log.Warn("event not recorded", "kind", kind, "err", err)
		}
	}
	a.SetEventSink(emit)
	// Age-based retention must hold on an idle gateway too, not only
	// every few hundred appends.
	a.Go("events-prune", func(ctx context.Context) error {
		for {
			if err := clock.Sleep(ctx, a.Clock, time.Hour); err != nil {
				return nil
			}
			if _, err := g.Events.Prune(ctx); err != nil && ctx.Err() == nil {
				a.Log.Warn("event log prune failed", "err", err)
			}
		}
	})
	a.OnTurnStart(func(r spine.TurnRequest) {
		emit("turn.started", r.Conversation(), map[string]any{"origin": r.Origin, "channel": r.Channel})
	})
	a.OnTurnDone(func(r spine.TurnRequest, res spine.Result) {
		p := map[string]any{"origin": r.Origin, "delivered": res.Delivered, "injected": res.Injected}
		if res.Err != nil {
			p["error"] = res.Err.Error()
		}
		emit("turn.finished", r.Conversation(), p)
	})
	a.Hub.Watch(func(m spine.Message, err error) {
		if m.Reply && err == nil {
			return // the turn.finished event covers replies
		}
		p := map[string]any{"channel": m.Channel, "origin": m.Origin, "proactive": m.Proactive}
		kind := "message.delivered"
		if err != nil {
			kind, p["error"] = "message.failed", err.Error()
		}
		emit(kind, spine.ConversationKey(m.Channel, m.ChatID), p)
	})
}

func (g *Gateway) startChannels(o DaemonOptions) error {
	a := g.App
	cc := a.Config.Channels
	if wc := cc.Webhook; wc.Enabled {
		secret := wc.EffectiveSecret(os.Getenv)
		h, err := channels.NewWebhookHandler(channels.WebhookHandlerOptions{Name: wc.Name, Secret: []byte(secret),
			Window: wc.Window.D(), MaxBody: wc.MaxBody, Inbound: g.Inbound.Inbound, Clock: a.Clock, Log: a.Log.With("channel", "webhook")})
		if err != nil {
			return err
		}
		if wc.OutboundURL != "" {
			out, err := channels.NewWebhookOutlet(channels.WebhookOutletOptions{URL: wc.OutboundURL, Secret: []byte(secret),
				MaxAttempts: wc.MaxAttempts, Clock: a.Clock, Log: a.Log.With("channel", "webhook")})
			if err != nil {
				return err
			}
			a.Hub.Register(channels.WebhookChannel, out)
		}
		ln, err := net.Listen("tcp", wc.Listen)
		if err != nil {
			return fmt.Errorf("gateway: webhook listen %s: %w", wc.Listen, err)
		}
		mux := http.NewServeMux()
		mux.Handle(h.Path(), h)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		a.Go("webhook", func(context.Context) error {
			go func() {
				<-g.inbound.Done()
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(sctx)
			}()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		a.Log.Info("webhook channel listening", "addr", ln.Addr().String(), "path", h.Path())
	}
	if tc := cc.Telegram; tc.Enabled {
		tg, err := channels.NewTelegram(channels.TelegramOptions{Token: tc.EffectiveToken(os.Getenv), AllowFrom: tc.AllowFrom,
			ServerURL: firstNonEmpty(o.TelegramServerURL, tc.APIURL), Inbound: g.Inbound.Inbound, Clock: a.Clock, Log: a.Log.With("channel", "telegram")})
		if err != nil {
			return err
		}
		a.Hub.Register(channels.TelegramChannel, tg)
		a.Go("telegram", func(context.Context) error { return tg.Run(g.inbound) })
	}
	return nil
}

// rpcErr maps the questions package's typed errors onto JSON-RPC errors.
func rpcErr(v any, err error) (any, error) {
	if err == nil {
		return v, nil
	}
	var qe *questions.Error
	if !errors.As(err, &qe) {
		return nil, err
	}
	msg := err.Error()
	var re *controlapi.RPCError
	switch qe.Code() {
	case "invalid_params", "not_answer":
		re = controlapi.InvalidParams("%s", msg)
	case "forbidden":
		re = controlapi.Forbidden("%s", msg)
	case "not_found":
		re = controlapi.NotFound("%s", msg)
	case "conflict", "expired":
		re = controlapi.Conflict("%s", msg)
	default:
		re = controlapi.Errorf(controlapi.CodeUnavailable, "%s", msg)
	}
	// The JSON-RPC code is coarser than the questions code (expired and
	// conflict share one); the data keeps the precise one for clients.
	re.Data = QuestionErrorData{Code: qe.Code(), Reason: qe.Reason}
	return nil, re
}

// QuestionErrorData is the data of a JSON-RPC error from the questions
// methods (input_get, input_answer, input_cancel, clarify.respond): the
// questions package's error code and reason.
type QuestionErrorData struct {
	Code   string `json:"questions_code"`
	Reason string `json:"reason,omitempty"`
}

// credentialGenerations adapts the auth store to the questions package's
// view of credentials: current generation, and whether still active.
type credentialGenerations struct{ s *auth.Store }

func (c credentialGenerations) CredentialGeneration(ctx context.Context, name string) (int, bool, error) {
	creds, err := c.s.List(ctx)
	if err != nil {
		return 0, false, err
	}
	for _, cr := range creds {
		if cr.Name == name {
			return cr.Generation, !cr.Revoked(), nil
		}
	}
	return 0, false, nil
}
