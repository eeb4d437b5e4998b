package channels

import (
	"context"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/spine"
)

type writes []string

func (w *writes) Write(p []byte) (int, error) { *w = append(*w, string(p)); return len(p), nil }

// How the terminal shows a streamed turn in each mode: appending (a pipe,
// `chat -m`), with the busy indicator (a terminal), redrawing (readline
// on a terminal, which erases its line before every write).
func TestCLIStreamModes(t *testing.T) {
	ctx := context.Background()
	text := func(s string) spine.Delta { return spine.Delta{Text: s} }
	tool := spine.Delta{Tool: &spine.ToolNote{Name: "web_fetch", Arguments: `{"url": "http://x.test"}`}}
	tests := []struct {
		name   string
		o      CLIStream
		deltas []spine.Delta
		reply  string
		want   []string
	}{
		{"append", CLIStream{}, []spine.Delta{text("Hi "), text("there.\nBye")}, "Hi there.\nBye",
			[]string{"Hi ", "there.\nBye", "\n"}},
		{"busy then tool line", CLIStream{Busy: true}, []spine.Delta{text("Looking."), tool, text("Found.")}, "Found.",
			[]string{BusyIndicator, "\r\033[K", "Looking.", "\n", "· web_fetch {\"url\": \"http://x.test\"}\n", "Found.", "\n"}},
		{"redraw repeats the open line above the prompt", CLIStream{Redraw: true, Busy: true}, []spine.Delta{text("Hi "), text("there.\nBy"), text("e")}, "Hi there.\nBye",
			[]string{BusyIndicator + "\n", eraseAbove + "Hi \n", eraseAbove + "Hi there.\nBy\n", eraseAbove + "Bye\n", eraseAbove + "Bye\n"}},
		{"redraw: tool line after the busy line", CLIStream{Redraw: true, Busy: true}, []spine.Delta{text("Look."), tool, text("Done.")}, "Done.",
			[]string{BusyIndicator + "\n", eraseAbove + "Look.\n", "· web_fetch {\"url\": \"http://x.test\"}\n", "Done.\n", eraseAbove + "Done.\n"}},
		{"redraw: busy line erased by an unstreamed reply", CLIStream{Redraw: true, Busy: true}, nil, "Whole.",
			[]string{BusyIndicator + "\n", eraseAbove + "Whole.\n"}},
		{"reply rewritten after streaming", CLIStream{}, []spine.Delta{text("Draft")}, "Final",
			[]string{"Draft", "\n", "Final\n"}},
		{"reply extended after streaming", CLIStream{}, []spine.Delta{text("Done.")}, "Done.\n\n(psst)",
			[]string{"Done.", "\n\n(psst)\n"}},
		{"no stream: busy cleared, reply whole", CLIStream{Busy: true}, nil, "Whole.",
			[]string{BusyIndicator, "\r\033[K", "Whole.\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w writes
			c := NewStreamingCLI(&w, tc.o)
			c.Begin()
			for _, d := range tc.deltas {
				c.Stream(ctx, d)
			}
			if err := c.Deliver(ctx, spine.Message{Content: tc.reply, Reply: true}); err != nil {
				t.Fatal(err)
			}
			if strings.Join(w, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("writes %q\n want %q", []string(w), tc.want)
			}
		})
	}
}

// A proactive message arriving mid-stream starts on a line of its own.
func TestCLIProactiveMidStream(t *testing.T) {
	var w writes
	c := NewStreamingCLI(&w, CLIStream{})
	c.Begin()
	c.Stream(context.Background(), spine.Delta{Text: "Half"})
	_ = c.Deliver(context.Background(), spine.Message{Content: "nudge", Proactive: true})
	if got := strings.Join(w, ""); got != "Half\n"+ProactiveMarker+"nudge\n" {
		t.Fatalf("got %q", got)
	}
}
