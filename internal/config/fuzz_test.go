package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad: config.json bytes either load (and the loaded config, written
// back as JSON, loads to the same config) or are refused with a *Error
// naming the file. Nothing panics.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		``, `{}`, "\n", `{"model":"openai/gpt-4o-mini"}`,
		`{"model":"ollama/qwen2.5:7b","sentinel":{"enabled":true,"interval":"45m","policy":{"quiet_hours":"22:00-08:00"}}}`,
		`{"cron":{"enabled":true},"heartbeat":{"enabled":true,"every":"30m","channel":"telegram"}}`,
		`{"channels":{"forward":["telegram"],"telegram":{"enabled":true,"token":"123:abc"}}}`,
		`{"gateway":{"tcp_listen":"127.0.0.1:7777"},"log":{"format":"json","level":"debug"}}`,
		`{"providers":{"openai":{"base_url":"http://localhost:8080/v1"},"timeout":"2m","max_attempts":3}}`,
		`{"model":"x"}}`, `{"sentinel":{"interval":"soon"}}`, `{"bogus":true}`, `[]`, `{"log":{"level":"loud"}}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "config.json")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || ce.File != path || ce.Msg == "" {
				t.Fatalf("refusal of %q is not a *config.Error naming the file: %T %v", data, err, err)
			}
			return
		}
		if len(bytes.TrimSpace(data)) > 0 && !json.Valid(data) {
			t.Fatalf("loaded %q, which is not one JSON value", data)
		}
		enc, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("loaded %q but cannot encode it: %v", data, err)
		}
		if err := os.WriteFile(path, enc, 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := Load(path)
		if err != nil {
			t.Fatalf("the loaded config, written back, is refused: %v\n in  %q\n out %s", err, data, enc)
		}
		enc2, _ := json.Marshal(again)
		if !bytes.Equal(enc, enc2) {
			t.Fatalf("round trip changed the config:\n in  %q\n 1st %s\n 2nd %s", data, enc, enc2)
		}
	})
}
