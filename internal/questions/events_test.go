package questions

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"testing"
)

// Old strict clients: copies of the payloads as first released. They must
// keep decoding what the service emits, with unknown fields rejected.
type oldInputRequested struct {
	Conversation string `json:"conversation"`
	RequestID    string `json:"request_id"`
	Incarnation  string `json:"incarnation"`
	Revision     int64  `json:"revision"`
	Kind         string `json:"kind"`
	Question     string `json:"question"`
	Options      []struct {
		OptionID string `json:"option_id"`
		Label    string `json:"label"`
	} `json:"options"`
}

type oldInputResolved struct {
	Conversation string `json:"conversation"`
	RequestID    string `json:"request_id"`
	Incarnation  string `json:"incarnation"`
	Revision     int64  `json:"revision"`
	Status       string `json:"status"`
	Reason       string `json:"reason"`
	RunID        string `json:"run_id"`
}

func TestFrozenEventPayloads(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	s := h.ask()
	rec, err := h.store.Answer(ctx, operator, answerFor(s, 0))
	if err != nil {
		t.Fatal(err)
	}
	c := h.ask()
	if _, err := h.store.Cancel(ctx, operator, CancelParams{c.Conversation, c.Request.RequestID, c.Incarnation, c.Revision}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind   string
		n      int
		old    func() any
		fields []string
	}{
		{EventInputRequested, 2, func() any { return &oldInputRequested{} },
			[]string{"conversation", "incarnation", "kind", "options", "question", "request_id", "revision"}},
		{EventInputResolved, 2, func() any { return &oldInputResolved{} },
			[]string{"conversation", "incarnation", "reason", "request_id", "revision", "run_id", "status"}},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			evs := h.eventsOf(tt.kind)
			if len(evs) != tt.n {
				t.Fatalf("%d %s events, want %d", len(evs), tt.kind, tt.n)
			}
			for _, e := range evs {
				b, err := json.Marshal(e.payload)
				if err != nil {
					t.Fatal(err)
				}
				dec := json.NewDecoder(bytes.NewReader(b))
				dec.DisallowUnknownFields()
				if err := dec.Decode(tt.old()); err != nil {
					t.Fatalf("old strict client cannot read %s: %v\n%s", tt.kind, err, b)
				}
				// No field may disappear either.
				var m map[string]any
				json.Unmarshal(b, &m)
				var keys []string
				for k := range m {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				if !reflect.DeepEqual(keys, tt.fields) {
					t.Fatalf("%s fields = %v, want exactly %v", tt.kind, keys, tt.fields)
				}
			}
		})
	}
	res := h.eventsOf(EventInputResolved)[0].payload.(InputResolvedEvent)
	if res.RunID != rec.RunID || res.Status != StatusAnswered || res.RequestID != s.Request.RequestID {
		t.Fatalf("answered event = %+v", res)
	}
	req := h.eventsOf(EventInputRequested)[0].payload.(InputRequestedEvent)
	if req.Revision != s.Revision || req.Options[1].OptionID != s.Request.Options[1].OptionID {
		t.Fatalf("requested event = %+v", req)
	}
}
