package configtype

import (
	"encoding/json"
	"testing"
	"time"
)

func TestDurationJSON(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{`"90s"`, 90 * time.Second, true},
		{`"1h30m"`, 90 * time.Minute, true},
		{`30`, 0, false},
		{`"soon"`, 0, false},
	}
	for _, tt := range tests {
		var d Duration
		err := json.Unmarshal([]byte(tt.in), &d)
		if (err == nil) != tt.ok || (tt.ok && d.D() != tt.want) {
			t.Errorf("%s: %v %v", tt.in, d.D(), err)
		}
	}
	b, _ := json.Marshal(Duration(time.Minute))
	if string(b) != `"1m"` {
		t.Fatalf("marshal %s", b)
	}
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name string
		got  bool
		want bool
	}{
		{"http url", AbsoluteHTTP("http://127.0.0.1:8/x"), true},
		{"no scheme", AbsoluteHTTP("localhost:8"), false},
		{"ftp", AbsoluteHTTP("ftp://x"), false},
		{"one line", OneLine("sk-abc"), true},
		{"newline", OneLine("a\nb"), false},
		{"channel", ChannelName("telegram"), true},
		{"channel empty", ChannelName(""), false},
		{"channel upper", ChannelName("Tele"), false},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %v", tt.name, tt.got)
		}
	}
}

func TestDurationString(t *testing.T) {
	for _, tt := range []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"}, {500 * time.Millisecond, "500ms"}, {90 * time.Second, "1m30s"}, {45 * time.Minute, "45m"},
		{90 * time.Minute, "1h30m"}, {2 * time.Hour, "2h"}, {time.Hour + 30*time.Second, "1h0m30s"}, {10 * time.Hour, "10h"},
	} {
		if got := Duration(tt.in).String(); got != tt.want {
			t.Errorf("%v: got %q, want %q", tt.in, got, tt.want)
		}
	}
}
