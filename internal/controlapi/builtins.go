package controlapi

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/eventlog"
)

// Wire names of the built-in notifications, for callers that match on the
// untyped Notification.Method; the contract is api.NotifyEvent and
// api.NotifyEventsDropped.
const (
	NotifyEvent         = string(api.NotifyEvent)
	NotifyEventsDropped = string(api.NotifyEventsDropped)
)

// LeaseStore is the Take Control part of *auth.Store.
type LeaseStore interface {
	TakeControl(ctx context.Context, p auth.Principal, conversation string, ttl time.Duration) (auth.Lease, error)
	Release(ctx context.Context, p auth.Principal, conversation string) (bool, error)
	ActiveControllerErr(ctx context.Context, conversation string) (string, bool, error)
}

// EventLog is the part of *eventlog.Log the built-ins use.
type EventLog interface {
	Append(ctx context.Context, kind, conversation string, payload any) (int64, error)
	Tail(ctx context.Context, afterSeq int64, limit int) ([]eventlog.Event, int64, error)
	Subscribe(ctx context.Context, afterSeq int64) (*eventlog.Subscription, error)
	LastSeq(ctx context.Context) (int64, error)
}

// Builtins are the dependencies of the built-in methods.
type Builtins struct {
	Leases LeaseStore // *auth.Store
	Events EventLog   // *eventlog.Log
	// Status adds the gateway's own fields to gateway.status (optional).
	Status  func(ctx context.Context) (api.GatewayState, error)
	Version string
}

// tailByteBudget keeps one events.tail response well under a client's frame
// cap even when payloads are large; the client pages on with after_seq.
const tailByteBudget = 512 << 10

// RegisterBuiltins registers ping, auth.whoami, gateway.status,
// events.tail, events.subscribe, events.unsubscribe, control.take,
// control.release and control.get.
func (s *Server) RegisterBuiltins(b Builtins) {
	Handle(s, api.Ping, Read, func(ctx context.Context, call *Call, _ api.Empty) (PingResult, error) {
		return PingResult{Pong: true, Time: s.clk.Now().UTC()}, nil
	})
	Handle(s, api.Whoami, Read, func(ctx context.Context, call *Call, _ api.Empty) (auth.Principal, error) {
		return call.Principal, nil
	})
	Handle(s, api.GatewayStatus, Read, func(ctx context.Context, call *Call, _ api.Empty) (StatusResult, error) {
		now := s.clk.Now()
		st := StatusResult{
			PID: os.Getpid(), Version: b.Version, StartedAt: s.started.UTC(),
			UptimeS: now.Sub(s.started).Seconds(), Connections: s.ConnCount(),
		}
		if b.Events != nil {
			last, err := b.Events.LastSeq(ctx)
			if err != nil {
				return StatusResult{}, err
			}
			st.LastSeq = last
		}
		if b.Status != nil {
			extra, err := b.Status(ctx)
			if err != nil {
				return StatusResult{}, err
			}
			st.Gateway = &extra
		}
		return st, nil
	})
	if b.Events != nil {
		s.registerEvents(b.Events)
	}
	if b.Leases != nil {
		s.registerControl(b.Leases, b.Events)
	}
}

// The built-ins' DTOs are the contract's (package api); these names keep
// existing callers compiling.
type (
	PingResult       = api.PingResult
	StatusResult     = api.StatusResult
	TailParams       = api.TailParams
	TailResult       = api.TailResult
	SubscribeParams  = api.SubscribeParams
	SubscribeResult  = api.SubscribeResult
	DroppedParams    = api.DroppedParams
	ControlParams    = api.ControlParams
	ControllerResult = api.ControllerResult
)

func (s *Server) registerEvents(log EventLog) {
	Handle(s, api.EventsTail, Read, func(ctx context.Context, call *Call, p TailParams) (TailResult, error) {
		evs, oldest, err := log.Tail(ctx, p.AfterSeq, p.Limit)
		if err != nil {
			return TailResult{}, err
		}
		limit := p.Limit
		if limit == 0 {
			limit = eventlog.DefaultTailLimit
		}
		res := TailResult{Events: evs, OldestRetained: oldest, Missed: p.AfterSeq+1 < oldest, More: len(evs) == limit}
		size := 0
		for i, ev := range evs {
			size += len(ev.Payload) + len(ev.Kind) + len(ev.Conversation) + 64
			if size > tailByteBudget && i > 0 {
				res.Events, res.More = evs[:i], true
				break
			}
		}
		return res, nil
	})
	Handle(s, api.EventsSubscribe, Read, func(ctx context.Context, call *Call, p SubscribeParams) (SubscribeResult, error) {
		var after int64
		if p.AfterSeq != nil {
			after = *p.AfterSeq
		} else {
			last, err := log.LastSeq(ctx)
			if err != nil {
				return SubscribeResult{}, err
			}
			after = last
		}
		c := call.conn
		subCtx, cancel := context.WithCancel(c.ctx)
		sub, err := log.Subscribe(subCtx, after)
		if err != nil {
			cancel()
			return SubscribeResult{}, err
		}
		c.mu.Lock()
		prev := c.eventsCancel
		c.eventsCancel = cancel
		c.mu.Unlock()
		if prev != nil {
			prev()
		}
		c.wg.Add(1)
		go s.forwardEvents(subCtx, c, sub, after)
		return SubscribeResult{AfterSeq: after, OldestRetained: sub.OldestRetained, Missed: after+1 < sub.OldestRetained}, nil
	})
	Handle(s, api.EventsUnsubscribe, Read, func(ctx context.Context, call *Call, _ api.Empty) (api.UnsubscribeResult, error) {
		c := call.conn
		c.mu.Lock()
		cancel := c.eventsCancel
		c.eventsCancel = nil
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return api.UnsubscribeResult{Unsubscribed: cancel != nil}, nil
	})
}

// reverifyEvery bounds how long a live feed may run on a credential that
// was revoked: notifications are not calls, so re-checking per event would
// cost a query per event per client for nothing.
const reverifyEvery = time.Second

func (s *Server) forwardEvents(ctx context.Context, c *conn, sub *eventlog.Subscription, last int64) {
	defer c.wg.Done()
	defer sub.Close()
	verified := s.clk.Now()
	drop := func(reason string) {
		_ = Notify(c, api.NotifyEventsDropped, DroppedParams{Reason: reason, LastSeq: last})
	}
	for {
		select {
		case ev, ok := <-sub.Events():
			if !ok {
				switch err := sub.Err(); {
				case ctx.Err() != nil:
				case errors.Is(err, eventlog.ErrSlowSubscriber):
					drop("slow_subscriber")
				default:
					drop("closed")
				}
				return
			}
			if now := s.clk.Now(); now.Sub(verified) >= reverifyEvery {
				if _, err := c.Principal(ctx); err != nil {
					drop("unauthorized")
					return
				}
				verified = now
			}
			if Notify(c, api.NotifyEvent, ev) != nil {
				return
			}
			last = ev.Seq
		case <-ctx.Done():
			return
		}
	}
}

func (s *Server) registerControl(leases LeaseStore, log EventLog) {
	record := func(ctx context.Context, kind, conv string, payload any) {
		if log == nil {
			return
		}
		if _, err := log.Append(ctx, kind, conv, payload); err != nil {
			s.log.Warn("controlapi: event append failed", "kind", kind, "err", err)
		}
	}
	// A conversation key and a TTL: nothing in these params is large.
	lim := Limits{MaxString: 256, MaxList: 0, MaxDepth: 1}
	check := func(p ControlParams, allowTTL bool) error {
		if p.Conversation == "" {
			return InvalidParams("conversation is required")
		}
		if p.TTLSeconds != 0 && !allowTTL {
			return InvalidParams("ttl_s applies to control.take only")
		}
		return nil
	}
	HandleLimits(s, api.ControlTake, Control, lim, func(ctx context.Context, call *Call, p ControlParams) (auth.Lease, error) {
		if err := check(p, true); err != nil {
			return auth.Lease{}, err
		}
		if p.TTLSeconds < 0 || p.TTLSeconds > int(auth.MaxLeaseTTL/time.Second) {
			return auth.Lease{}, InvalidParams("ttl_s must be 0..%d", int(auth.MaxLeaseTTL/time.Second))
		}
		lease, err := leases.TakeControl(ctx, call.Principal, p.Conversation, time.Duration(p.TTLSeconds)*time.Second)
		if err != nil {
			return auth.Lease{}, err
		}
		record(ctx, eventlog.KindControlTaken, p.Conversation, lease)
		return lease, nil
	})
	HandleLimits(s, api.ControlRelease, Control, lim, func(ctx context.Context, call *Call, p ControlParams) (api.ReleaseResult, error) {
		if err := check(p, false); err != nil {
			return api.ReleaseResult{}, err
		}
		released, err := leases.Release(ctx, call.Principal, p.Conversation)
		if err != nil {
			return api.ReleaseResult{}, err
		}
		if released {
			record(ctx, eventlog.KindControlReleased, p.Conversation, map[string]string{"by": call.Principal.Name})
		}
		return api.ReleaseResult{Released: released}, nil
	})
	HandleLimits(s, api.ControlGet, Read, lim, func(ctx context.Context, call *Call, p ControlParams) (ControllerResult, error) {
		if err := check(p, false); err != nil {
			return ControllerResult{}, err
		}
		name, ok, err := leases.ActiveControllerErr(ctx, p.Conversation)
		if err != nil {
			return ControllerResult{}, err
		}
		return ControllerResult{Conversation: p.Conversation, Controller: name, Active: ok}, nil
	})
}
