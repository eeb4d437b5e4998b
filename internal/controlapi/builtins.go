package controlapi

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/eventlog"
)

// Notifications the built-in methods send.
const (
	// NotifyEvent carries one eventlog.Event to an events.subscribe caller.
	NotifyEvent = "events.event"
	// NotifyEventsDropped ends a subscription: params {"reason", "last_seq"};
	// resubscribe with after_seq = last_seq. Reasons: slow_subscriber,
	// unauthorized, closed.
	NotifyEventsDropped = "events.dropped"
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
	Status  func(ctx context.Context) (any, error)
	Version string
}

// tailByteBudget keeps one events.tail response well under a client's frame
// cap even when payloads are large; the client pages on with after_seq.
const tailByteBudget = 512 << 10

// RegisterBuiltins registers ping, auth.whoami, gateway.status,
// events.tail, events.subscribe, events.unsubscribe, control.take,
// control.release and control.get.
func (s *Server) RegisterBuiltins(b Builtins) {
	s.Handle("ping", Read, func(ctx context.Context, call *Call) (any, error) {
		if err := DecodeStrict(call.Params, &struct{}{}); err != nil {
			return nil, err
		}
		return PingResult{Pong: true, Time: s.clk.Now().UTC()}, nil
	})
	s.Handle("auth.whoami", Read, func(ctx context.Context, call *Call) (any, error) {
		if err := DecodeStrict(call.Params, &struct{}{}); err != nil {
			return nil, err
		}
		return call.Principal, nil
	})
	s.Handle("gateway.status", Read, func(ctx context.Context, call *Call) (any, error) {
		if err := DecodeStrict(call.Params, &struct{}{}); err != nil {
			return nil, err
		}
		now := s.clk.Now()
		st := StatusResult{
			PID: os.Getpid(), Version: b.Version, StartedAt: s.started.UTC(),
			UptimeS: now.Sub(s.started).Seconds(), Connections: s.ConnCount(),
		}
		if b.Events != nil {
			last, err := b.Events.LastSeq(ctx)
			if err != nil {
				return nil, err
			}
			st.LastSeq = last
		}
		if b.Status != nil {
			extra, err := b.Status(ctx)
			if err != nil {
				return nil, err
			}
			st.Gateway = extra
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

// PingResult is ping's result.
type PingResult struct {
	Pong bool      `json:"pong"`
	Time time.Time `json:"time"`
}

// StatusResult is gateway.status's result.
type StatusResult struct {
	PID         int       `json:"pid"`
	Version     string    `json:"version,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	UptimeS     float64   `json:"uptime_s"`
	Connections int       `json:"connections"`
	LastSeq     int64     `json:"last_seq"`
	Gateway     any       `json:"gateway,omitempty"`
}

// TailParams are events.tail's params.
type TailParams struct {
	AfterSeq int64 `json:"after_seq"`
	Limit    int   `json:"limit,omitempty"`
}

// TailResult is events.tail's result. Missed is set when events after
// AfterSeq were pruned before they could be read; More when the page was
// cut short by the limit or the size budget.
type TailResult struct {
	Events         []eventlog.Event `json:"events"`
	OldestRetained int64            `json:"oldest_retained"`
	Missed         bool             `json:"missed"`
	More           bool             `json:"more"`
}

// SubscribeParams are events.subscribe's params. Without after_seq the
// feed starts at the next event.
type SubscribeParams struct {
	AfterSeq *int64 `json:"after_seq,omitempty"`
}

// SubscribeResult is events.subscribe's result.
type SubscribeResult struct {
	AfterSeq       int64 `json:"after_seq"`
	OldestRetained int64 `json:"oldest_retained"`
	Missed         bool  `json:"missed"`
}

// DroppedParams are the params of NotifyEventsDropped.
type DroppedParams struct {
	Reason  string `json:"reason"`
	LastSeq int64  `json:"last_seq"`
}

func (s *Server) registerEvents(log EventLog) {
	s.Handle("events.tail", Read, func(ctx context.Context, call *Call) (any, error) {
		var p TailParams
		if err := DecodeStrict(call.Params, &p); err != nil {
			return nil, err
		}
		evs, oldest, err := log.Tail(ctx, p.AfterSeq, p.Limit)
		if err != nil {
			return nil, err
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
	s.Handle("events.subscribe", Read, func(ctx context.Context, call *Call) (any, error) {
		var p SubscribeParams
		if err := DecodeStrict(call.Params, &p); err != nil {
			return nil, err
		}
		var after int64
		if p.AfterSeq != nil {
			after = *p.AfterSeq
		} else {
			last, err := log.LastSeq(ctx)
			if err != nil {
				return nil, err
			}
			after = last
		}
		c := call.conn
		subCtx, cancel := context.WithCancel(c.ctx)
		sub, err := log.Subscribe(subCtx, after)
		if err != nil {
			cancel()
			return nil, err
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
	s.Handle("events.unsubscribe", Read, func(ctx context.Context, call *Call) (any, error) {
		if err := DecodeStrict(call.Params, &struct{}{}); err != nil {
			return nil, err
		}
		c := call.conn
		c.mu.Lock()
		cancel := c.eventsCancel
		c.eventsCancel = nil
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return map[string]bool{"unsubscribed": cancel != nil}, nil
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
	drop := func(reason string) { _ = c.Notify(NotifyEventsDropped, DroppedParams{Reason: reason, LastSeq: last}) }
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
			if c.Notify(NotifyEvent, ev) != nil {
				return
			}
			last = ev.Seq
		case <-ctx.Done():
			return
		}
	}
}

// ControlParams are the params of control.take, control.release and
// control.get. TTLSeconds (control.take only) defaults to 15 minutes.
type ControlParams struct {
	Conversation string `json:"conversation"`
	TTLSeconds   int    `json:"ttl_s,omitempty"`
}

// ControllerResult is control.get's result.
type ControllerResult struct {
	Conversation string `json:"conversation"`
	Controller   string `json:"controller,omitempty"`
	Active       bool   `json:"active"`
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
	decode := func(call *Call, allowTTL bool) (ControlParams, error) {
		var p ControlParams
		if err := DecodeStrictLimits(call.Params, &p, Limits{MaxString: 256, MaxList: 0, MaxDepth: 1}); err != nil {
			return p, err
		}
		if p.Conversation == "" {
			return p, InvalidParams("conversation is required")
		}
		if p.TTLSeconds != 0 && !allowTTL {
			return p, InvalidParams("ttl_s applies to control.take only")
		}
		return p, nil
	}
	s.Handle("control.take", Control, func(ctx context.Context, call *Call) (any, error) {
		p, err := decode(call, true)
		if err != nil {
			return nil, err
		}
		if p.TTLSeconds < 0 || p.TTLSeconds > int(auth.MaxLeaseTTL/time.Second) {
			return nil, InvalidParams("ttl_s must be 0..%d", int(auth.MaxLeaseTTL/time.Second))
		}
		lease, err := leases.TakeControl(ctx, call.Principal, p.Conversation, time.Duration(p.TTLSeconds)*time.Second)
		if err != nil {
			return nil, err
		}
		record(ctx, eventlog.KindControlTaken, p.Conversation, lease)
		return lease, nil
	})
	s.Handle("control.release", Control, func(ctx context.Context, call *Call) (any, error) {
		p, err := decode(call, false)
		if err != nil {
			return nil, err
		}
		released, err := leases.Release(ctx, call.Principal, p.Conversation)
		if err != nil {
			return nil, err
		}
		if released {
			record(ctx, eventlog.KindControlReleased, p.Conversation, map[string]string{"by": call.Principal.Name})
		}
		return map[string]bool{"released": released}, nil
	})
	s.Handle("control.get", Read, func(ctx context.Context, call *Call) (any, error) {
		p, err := decode(call, false)
		if err != nil {
			return nil, err
		}
		name, ok, err := leases.ActiveControllerErr(ctx, p.Conversation)
		if err != nil {
			return nil, err
		}
		return ControllerResult{Conversation: p.Conversation, Controller: name, Active: ok}, nil
	})
}
