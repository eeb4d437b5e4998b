// Package gateway is `raven gateway`: the daemon — single-instance lock,
// control API, attached TUI and chat connections, channels — on top of one runtime.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/statefile"
)

// ErrAlreadyRunning is returned when another gateway holds the data dir.
var ErrAlreadyRunning = errors.New("gateway: already running")

// DaemonOptions configure Run.
type DaemonOptions struct {
	// Runtime are the runtime's inputs; Start runs every service
	// (runtime.ServicesGateway) whatever Runtime.Services says.
	Runtime runtime.Options
	Version string
	// Ready, when set, is called once the control socket accepts calls.
	Ready func(startup time.Duration)
	// TelegramServerURL overrides the Bot API URL (tests).
	TelegramServerURL string
	// Reload, when set, reloads config.json at once on each receive (the
	// entry point sends on SIGHUP). The file is also polled.
	Reload <-chan struct{}
	// ConfigPoll is how often config.json is checked for a change (default
	// DefaultConfigPoll, on the runtime's clock).
	ConfigPoll time.Duration
	// Overlay re-applies the entry point's own overrides (--model) to each
	// reloaded config, so they do not read as changes of the file.
	Overlay func(*config.Config) error
}

// Gateway is the daemon on top of one runtime: the control API, the
// attached TUI and chat connections, and the channels' listeners.
type Gateway struct {
	rt      *runtime.Runtime
	control *controlapi.Server
	// attached are the chat.attach connections, so a repeat is a no-op.
	attachMu sync.Mutex
	attached map[attachKey]struct{}
	// reload is what the last config reload left.
	reload reloadState
	// inbound ends the channels' receive loops (Telegram polling, the
	// webhook listener) before the scheduler drains, so no message is
	// acknowledged that could no longer be run.
	inbound     context.Context
	stopInbound context.CancelFunc
}

// Runtime is the gateway's runtime.
func (g *Gateway) Runtime() *runtime.Runtime { return g.rt }

// Control is the gateway's control-API server.
func (g *Gateway) Control() *controlapi.Server { return g.control }

// Run is `raven gateway`: it takes the single-instance lock, starts every
// service, serves the control API until ctx ends, then shuts down gracefully:
// stop accepting, let running turns finish within the grace period, cancel
// the rest, persist, exit.
func Run(ctx context.Context, o DaemonOptions) error {
	start := time.Now()
	lock := statefile.NewLock(o.Runtime.Paths.GatewayLock())
	// A command probing whether a gateway runs holds the lock shared for a
	// moment: wait that out, but not a gateway that really runs.
	lctx, cancel := context.WithTimeout(ctx, lockProbeWait)
	err := lock.Acquire(lctx)
	cancel()
	if errors.Is(err, statefile.ErrLockTimeout) {
		pid := readPID(o.Runtime.Paths.GatewayLock())
		return fmt.Errorf("%w for %s (pid %s); stop it first or use another --data-dir", ErrAlreadyRunning, o.Runtime.Paths.Root, pid)
	}
	if err != nil {
		return err
	}
	defer lock.Release()
	if err := os.WriteFile(o.Runtime.Paths.GatewayLock(), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fmt.Errorf("gateway: write pid: %w", err)
	}

	g, err := Start(ctx, o)
	if err != nil {
		return err
	}
	ln, err := controlapi.ListenUnix(o.Runtime.Paths.Socket())
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
			if err := g.control.Serve(serveCtx, ln); err != nil && serveCtx.Err() == nil {
				g.rt.Logger().Error("control API stopped", "addr", ln.Addr(), "err", err)
			}
		}()
	}
	serve(ln)
	if gc := o.Runtime.Config.Gateway; gc.TCPListen != "" {
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
	g.rt.Logger().Info("gateway ready", "socket", o.Runtime.Paths.Socket(), "pid", os.Getpid(), "startup", startup.Round(time.Microsecond),
		"model", g.rt.ProviderName(), "sentinel", o.Runtime.Config.Sentinel.Enabled)
	if o.Ready != nil {
		o.Ready(startup)
	}

	<-ctx.Done()
	g.rt.Logger().Info("gateway stopping", "grace", o.Runtime.Config.Gateway.ShutdownGrace.D())
	stopServe() // stop accepting control-API connections
	serving.Wait()
	grace, cancel := context.WithTimeout(context.Background(), o.Runtime.Config.Gateway.ShutdownGrace.D())
	defer cancel()
	err = g.shutdown(grace)
	os.Remove(o.Runtime.Paths.Socket())
	g.rt.Logger().Info("gateway stopped")
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

// Start builds the runtime with every service and starts the gateway's
// own parts except the listeners: the control API, the operator token, the
// channels.
func Start(ctx context.Context, o DaemonOptions) (*Gateway, error) {
	g := &Gateway{attached: map[attachKey]struct{}{}}
	ro := o.Runtime
	ro.Services = runtime.ServicesGateway
	ro.CronChannels = nil
	ro.ShutdownReason = shutdownReason
	ro.StartChannels = func(rt *runtime.Runtime) error {
		g.rt = rt
		g.inbound, g.stopInbound = context.WithCancel(rt.ServiceContext())
		return g.startChannels(o)
	}
	rt, err := runtime.Build(ctx, ro)
	if err != nil {
		return nil, err
	}
	if err := g.wire(ctx, o); err != nil {
		rt.Close(context.Background())
		return nil, err
	}
	g.reload.appliedAt = rt.Clock().Now()
	poll := o.ConfigPoll
	if poll <= 0 {
		poll = DefaultConfigPoll
	}
	stamp := stampOf(rt.Paths().Config())
	rt.Go("config watch", func(ctx context.Context) error { return g.watchConfig(ctx, stamp, poll, o.Reload, o.Overlay) })
	return g, nil
}

// shutdownReason is what a turn waiting on ask_user reads when the gateway
// stops under it.
const shutdownReason = "the gateway is shutting down"

func (g *Gateway) shutdown(ctx context.Context) error {
	g.stopInbound()
	return g.rt.Close(ctx)
}

// Shutdown stops a gateway made with Start.
func (g *Gateway) Shutdown(ctx context.Context) error { return g.shutdown(ctx) }

func (g *Gateway) wire(ctx context.Context, o DaemonOptions) error {
	rt := g.rt
	if _, err := rt.Auth().EnsureOperatorToken(ctx, rt.Paths().OperatorToken()); err != nil {
		return err
	}
	g.control = controlapi.NewServer(controlapi.Options{Auth: rt.Auth(), Clock: rt.Clock(), Logger: rt.Logger().With("component", "controlapi")})
	g.control.RegisterBuiltins(controlapi.Builtins{Leases: rt.Auth(), Events: rt.Events(), Version: o.Version, Status: g.status})

	clarify := &questions.ClarifyHandler{Broker: rt.Broker(), Authority: rt.Authority()}
	controlapi.Handle(g.control, api.ClarifyRespond, controlapi.Control,
		func(ctx context.Context, c *controlapi.Call, in questions.ClarifyRespondParams) (questions.ClarifyRespondResult, error) {
			return rpcErr(clarify.Respond(ctx, c.Principal, in))
		})
	RegisterQuestions(g.control, rt.Questions())
	RegisterAuth(g.control, rt.Auth())
	controlapi.Handle(g.control, api.ChatSend, controlapi.Control, g.chatSend)
	controlapi.Handle(g.control, api.ChatAttach, controlapi.Read, g.chatAttach)
	g.registerApprovals()
	return nil
}

// lockProbeWait bounds the wait for the gateway lock at start: long enough
// for a concurrent probe (Running) to let go, short enough that a second
// gateway is refused at once.
const lockProbeWait = 250 * time.Millisecond

// Running reports whether a gateway holds paths' data dir, and its pid.
func Running(p config.Paths) (bool, string, error) {
	// A shared probe: concurrent probers (three `cron serve` starting at
	// once) never take each other for the gateway.
	held, err := statefile.NewLock(p.GatewayLock()).Held()
	if err != nil || !held {
		return false, "", err
	}
	return true, readPID(p.GatewayLock()), nil
}
