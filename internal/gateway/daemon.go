package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/channels"
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
	// events queues runtime events for the event log's writer goroutine.
	events *eventWriter
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

// shutdownReason is what a turn waiting on ask_user reads when the gateway
// stops under it.
const shutdownReason = "the gateway is shutting down"

func (g *Gateway) shutdown(ctx context.Context) error {
	g.stopInbound()
	// A turn blocked on the owner would otherwise hold the whole grace
	// period; cancelled, it tells the model and finishes promptly.
	if b := g.App.Broker; b != nil {
		b.CancelAll(shutdownReason)
	}
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
		g.attached.notify(conv, clarifyRequestMethod, req)
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
		Leases:    g.Auth,
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
	g.Auth.OnCredentialChange(g.Questions.CredentialChanged)
	for _, m := range g.Questions.Methods() {
		g.Control.Handle(m.Name, m.Access, func(ctx context.Context, c *controlapi.Call) (any, error) {
			return questions.RPCResult(m.Handle(ctx, c.Principal, c.Params))
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
	a.Hub.Register(channels.TUIChannel, channels.NewTUI(g.publishTUI))
	a.Hub.Register(cliChannel, spine.OutletFunc(g.deliverCLI))
	g.Control.Handle("chat.send", controlapi.Control, g.chatSend)
	g.Control.Handle("chat.attach", controlapi.Read, g.chatAttach)
	return g.startChannels(o)
}
