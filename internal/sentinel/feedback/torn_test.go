package feedback

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

// A full disk or a crash mid-append leaves the last line without its
// newline; the next record must not be glued to it and lost.
func TestTornLastLineDoesNotSwallowNextNudge(t *testing.T) {
	var logs bytes.Buffer
	tr, _ := newTracker(t)
	tr = NewTracker(tr.Path(), Options{Clock: tr.clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	if err := tr.RecordDispatched(ctx, Record{NudgeID: "n1", Topic: "tea"}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(tr.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2025-03-12T10:00:00Z","event":"dispatched","nudge_id":"torn","to`)
	f.Close()
	if err := tr.RecordDispatched(ctx, Record{NudgeID: "n2", Topic: "walk"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(tr.Path())
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if last := lines[len(lines)-1]; !json.Valid([]byte(last)) || !strings.Contains(last, `"nudge_id":"n2"`) {
		t.Fatalf("the record after the torn line is not on a line of its own: %q", last)
	}
	if _, err := tr.RecordVerdict(ctx, "n2", EventAccepted, "", ""); err != nil {
		t.Fatalf("verdict on the nudge written after a torn line: %v", err)
	}
	ns, err := tr.Nudges(10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range ns {
		ids = append(ids, n.NudgeID+"="+n.Verdict)
	}
	if got := strings.Join(ids, ","); got != "n2=accepted,n1=" {
		t.Fatalf("nudges = %s", got)
	}
	if !strings.Contains(logs.String(), "torn") {
		t.Fatalf("no warning about the torn line; logs:\n%s", logs.String())
	}
}

// The daily trim rewrites the file: torn bytes go, a record glued after
// them by an older build is kept whole, fields it does not know survive.
func TestTrimDropsTornBytesKeepsRecords(t *testing.T) {
	tr, clk := newTracker(t)
	ctx := context.Background()
	if err := tr.Append(ctx, Record{NudgeID: "old", Event: EventDispatched, Time: t0.Add(-40 * 24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(tr.Path(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"time":"2025-03-1{"time":"2025-03-12T09:00:00Z","event":"dispatched","nudge_id":"glued"}` + "\n")
	f.WriteString(`{"time":"2025-03-12T09:30:00Z","event":"dispatched","nudge_id":"future","new_field":1}` + "\n")
	f.Close()
	clk.Set(t0)
	if ok, err := tr.MaybeTrim(ctx); err != nil || !ok {
		t.Fatalf("trim: %v %v", ok, err)
	}
	got, _ := os.ReadFile(tr.Path())
	want := `{"time":"2025-03-12T09:00:00Z","event":"dispatched","nudge_id":"glued"}` + "\n" +
		`{"time":"2025-03-12T09:30:00Z","event":"dispatched","nudge_id":"future","new_field":1}` + "\n"
	if string(got) != want {
		t.Fatalf("after trim:\n%s\nwant:\n%s", got, want)
	}
}
