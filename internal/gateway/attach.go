package gateway

import (
	"sync"

	"github.com/raven-agent/raven/internal/controlapi"
)

// attachments tracks which control-API connections follow which
// conversation, so chat.message and clarify.request reach only the TUI
// clients that are looking at that conversation.
type attachments struct {
	mu    sync.Mutex
	conns map[string]map[controlapi.Notifier]struct{}
}

func newAttachments() *attachments {
	return &attachments{conns: make(map[string]map[controlapi.Notifier]struct{})}
}

// attach follows conv on n until n's connection ends.
func (a *attachments) attach(conv string, n controlapi.Notifier) {
	a.mu.Lock()
	set := a.conns[conv]
	if set == nil {
		set = make(map[controlapi.Notifier]struct{})
		a.conns[conv] = set
	}
	_, already := set[n]
	set[n] = struct{}{}
	a.mu.Unlock()
	if already {
		return
	}
	go func() {
		<-n.Done()
		a.mu.Lock()
		delete(a.conns[conv], n)
		if len(a.conns[conv]) == 0 {
			delete(a.conns, conv)
		}
		a.mu.Unlock()
	}()
}

// notify sends method to every connection attached to conv and reports how
// many it reached. A slow connection's bounded queue drops it, never us.
func (a *attachments) notify(conv, method string, params any) int {
	a.mu.Lock()
	targets := make([]controlapi.Notifier, 0, len(a.conns[conv]))
	for n := range a.conns[conv] {
		targets = append(targets, n)
	}
	a.mu.Unlock()
	sent := 0
	for _, n := range targets {
		if n.Notify(method, params) == nil {
			sent++
		}
	}
	return sent
}
