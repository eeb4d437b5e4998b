package runtime

import (
	"context"
	"fmt"
	"strconv"
	"sync"

	"github.com/raven-agent/raven/internal/spine"
)

// memOutbox is a stand-in until internal/outbox lands (h/outbox).
type memOutbox struct {
	mu    sync.Mutex
	n     int
	items []OutboxItem
	done  map[string]bool
}

func openStoreOutbox(context.Context, *Runtime) (Outbox, error) {
	return &memOutbox{done: map[string]bool{}}, nil
}

func (o *memOutbox) Put(_ context.Context, m spine.Message) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n++
	id := "ob-" + strconv.Itoa(o.n)
	o.items = append(o.items, OutboxItem{ID: id, Message: m})
	return id, nil
}

func (o *memOutbox) Claim(context.Context, string) ([]OutboxItem, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []OutboxItem
	for _, it := range o.items {
		if !o.done[it.ID] {
			out = append(out, it)
		}
	}
	return out, nil
}

func (o *memOutbox) MarkDelivered(_ context.Context, id, _ string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.done[id] {
		return fmt.Errorf("outbox: %s already delivered", id)
	}
	o.done[id] = true
	return nil
}

func (o *memOutbox) Release(context.Context, string, string) error { return nil }

func (o *memOutbox) Count(context.Context) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.items) - len(o.done), nil
}
