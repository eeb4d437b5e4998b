package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Event is one line of the timeline: something that really happened in the
// run, stamped with the virtual clock.
type Event struct {
	At      time.Time `json:"at"`
	Section string    `json:"section"`
	// Kind is a stable machine name ("turn.reply", "sentinel.tick", …).
	Kind string `json:"kind"`
	// Label is the short human label printed in the second column.
	Label string `json:"label"`
	Text  string `json:"text"`
	// Why is one line of explanation, printed under the event.
	Why string `json:"why,omitempty"`
	// Proactive marks a message Raven sent on its own.
	Proactive bool           `json:"proactive,omitempty"`
	Data      map[string]any `json:"data,omitempty"`
}

// Timeline renders events as readable text or as JSON lines. It is safe for
// concurrent use: outlets report from lane goroutines.
type Timeline struct {
	mu      sync.Mutex
	w       io.Writer
	json    bool
	section string
	events  []Event
	err     error
}

func newTimeline(w io.Writer, asJSON bool) *Timeline { return &Timeline{w: w, json: asJSON} }

const (
	labelWidth = 14
	textIndent = 2 + 9 + 2 + labelWidth + 2 // "  Mon 08:00  label…  "
	maxLine    = 100
)

// heading starts a section.
func (t *Timeline) heading(name, title, blurb string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.section = name
	if t.json {
		return
	}
	bar := strings.Repeat("━", max(3, 76-len([]rune(title))))
	t.printf("\n━━ %s %s\n", title, bar)
	for _, l := range wrap(blurb, 78) {
		t.printf("   %s\n", l)
	}
	t.printf("\n")
}

// note prints a narrator line (text mode only): context for a newcomer,
// never a result.
func (t *Timeline) note(format string, a ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.json {
		return
	}
	for _, l := range wrap(fmt.Sprintf(format, a...), 76) {
		t.printf("   · %s\n", l)
	}
}

// emit records and prints e.
func (t *Timeline) emit(e Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e.Section = t.section
	t.events = append(t.events, e)
	if t.json {
		b, err := json.Marshal(e)
		if err != nil {
			t.err = err
			return
		}
		t.printf("%s\n", b)
		return
	}
	label := e.Label
	if e.Proactive {
		label = "⚑ " + label
	}
	lines := strings.Split(strings.TrimRight(e.Text, "\n"), "\n")
	first := true
	for _, raw := range lines {
		for _, l := range wrap(raw, maxLine-textIndent) {
			if first {
				t.printf("  %s  %s  %s\n", stamp(e.At), pad(label, labelWidth), l)
				first = false
				continue
			}
			t.printf("%s%s\n", strings.Repeat(" ", textIndent), l)
		}
	}
	if first {
		t.printf("  %s  %s\n", stamp(e.At), label)
	}
	if e.Why != "" {
		for i, l := range wrap(e.Why, maxLine-textIndent-7) {
			p := "↳ why: "
			if i > 0 {
				p = "       "
			}
			t.printf("%s%s%s\n", strings.Repeat(" ", textIndent), p, l)
		}
	}
}

func (t *Timeline) printf(format string, a ...any) {
	if t.err != nil {
		return
	}
	_, t.err = fmt.Fprintf(t.w, format, a...)
}

// Events returns a copy of everything emitted so far.
func (t *Timeline) Events() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Event(nil), t.events...)
}

func (t *Timeline) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func stamp(at time.Time) string { return at.Format("Mon 15:04") }

func pad(s string, n int) string {
	if w := len([]rune(s)); w < n {
		return s + strings.Repeat(" ", n-w)
	}
	return s
}

// wrap breaks s on spaces into lines of at most width runes (a longer word
// stays whole).
func wrap(s string, width int) []string {
	words := strings.Fields(s)
	if len(words) == 0 {
		return []string{""}
	}
	var out []string
	var cur strings.Builder
	n := 0
	for _, w := range words {
		wl := len([]rune(w))
		if n > 0 && n+1+wl > width {
			out = append(out, cur.String())
			cur.Reset()
			n = 0
		}
		if n > 0 {
			cur.WriteByte(' ')
			n++
		}
		cur.WriteString(w)
		n += wl
	}
	return append(out, cur.String())
}

// quote shows a message inline, shortened when long.
func quote(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 160 {
		s = string(r[:157]) + "…"
	}
	return "“" + s + "”"
}
