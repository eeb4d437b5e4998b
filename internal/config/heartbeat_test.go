package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestHeartbeatDefaultsAndValidation(t *testing.T) {
	d := Default().Heartbeat
	if d.Interval.D() != 30*time.Minute || d.WakeMinInterval.D() != 2*time.Minute || d.MaxFileBytes != 64<<10 || d.TurnTimeout.D() != 10*time.Minute {
		t.Fatalf("defaults %+v", d)
	}
	tests := []struct {
		name    string
		json    string
		wantKey string
	}{
		{"defaults", `{}`, ""},
		{"target", `{"heartbeat":{"channel":"telegram","chat_id":"123"}}`, ""},
		{"chat id without channel", `{"heartbeat":{"chat_id":"123"}}`, "heartbeat.chat_id"},
		{"bad channel", `{"heartbeat":{"channel":"Tele gram"}}`, "heartbeat.channel"},
		{"wake guard too small", `{"heartbeat":{"wake_min_interval":"0s"}}`, "heartbeat.wake_min_interval"},
		{"wake guard too large", `{"heartbeat":{"wake_min_interval":"2h"}}`, "heartbeat.wake_min_interval"},
		{"file cap too small", `{"heartbeat":{"max_file_bytes":10}}`, "heartbeat.max_file_bytes"},
		{"turn timeout too small", `{"heartbeat":{"turn_timeout":"1s"}}`, "heartbeat.turn_timeout"},
		{"interval too small", `{"heartbeat":{"interval":"10s"}}`, "heartbeat.interval"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			if err := os.WriteFile(path, []byte(tc.json), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			var ce *Error
			switch {
			case tc.wantKey == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.wantKey != "" && (!errors.As(err, &ce) || ce.Key != tc.wantKey):
				t.Fatalf("err = %v, want key %s", err, tc.wantKey)
			}
		})
	}
}
