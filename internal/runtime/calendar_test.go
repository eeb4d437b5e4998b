package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel"
)

// sentinel.calendar.path feeds the planner context's calendar through the
// assembled runtime: recurring events expanded in the owner's zone, the
// prompt showing them. Off by default.
func TestCalendarReachesPlannerContext(t *testing.T) {
	ics := filepath.Join(t.TempDir(), "me.ics")
	// The runtime's clock starts Tuesday 2025-03-04 10:00 UTC.
	body := "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\n" +
		"BEGIN:VEVENT\r\nUID:gym\r\nDTSTAMP:20250101T000000Z\r\nDTSTART:20250303T180000Z\r\nDTEND:20250303T190000Z\r\nRRULE:FREQ=DAILY\r\nSUMMARY:Gym\r\nEND:VEVENT\r\n" +
		"END:VCALENDAR\r\n"
	if err := os.WriteFile(ics, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	off, _ := newSentinelApp(t, false, []llm.Turn{})
	if cal := off.Sentinel().Assembler.Assemble(context.Background()).Calendar; len(cal) != 0 {
		t.Fatalf("calendar on by default: %+v", cal)
	}
	a, _ := newSentinelApp(t, false, []llm.Turn{}, func(o *Options) { o.Config.Sentinel.Calendar.Path = ics })
	pc := a.Sentinel().Assembler.Assemble(context.Background())
	if len(pc.Calendar) != 2 || pc.Calendar[0].Title != "Gym" || pc.Calendar[0].Start.Format("2006-01-02 15:04") != "2025-03-04 18:00" {
		t.Fatalf("calendar = %+v, want today's and tomorrow's gym", pc.Calendar)
	}
	if p := sentinel.RenderContext(pc); !strings.Contains(p, "# Calendar\n- Tue 04 Mar 18:00–19:00 Gym") {
		t.Fatalf("planner prompt lacks the calendar:\n%s", p)
	}
}
