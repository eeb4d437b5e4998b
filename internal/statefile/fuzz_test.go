package statefile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

// sectionsOf is every section of the store's current state, compacted so
// the canonical and the hand-edited layouts compare equal.
func sectionsOf(t *testing.T, s *Store) map[string]string {
	out := map[string]string{}
	for k, v := range s.sections {
		var b bytes.Buffer
		if err := json.Compact(&b, v); err != nil {
			t.Fatalf("section %q holds invalid JSON %q: %v", k, v, err)
		}
		out[k] = b.String()
	}
	return out
}

func equalSections(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// FuzzStateFile: state.json bytes are read by the fast canonical splitter
// or by encoding/json, and both must agree; what is refused is a
// *CorruptError (moved aside byte for byte) or a *NewerVersionError (left
// untouched); what is accepted survives a write and a fresh read, every
// section intact.
func FuzzStateFile(f *testing.F) {
	for _, s := range []string{
		"{\"version\":1,\"gen\":3,\"sections\":{\n\"injector\":{\"queue\":[]},\n\"policy\":{\"fires\":[{\"at\":\"2026-12-01T09:00:00Z\",\"session\":\"telegram:42\",\"action\":\"nudge\",\"topic\":\"tax-return\"}]}\n}}\n",
		"{\"version\":1,\"gen\":1,\"sections\":{\n}}\n",
		`{"version": 1, "gen": 7, "sections": {"policy": {"fires": []}, "runner": {"last_tick": "2026-12-01T09:00:00Z"}}}`,
		"{\"version\":2,\"gen\":1,\"sections\":{\n\"x\":1\n}}\n", `{"version":1}`, `{}`, `[]`, `{"version":-1}`, `{"version":1,"sections":{"a":1}}}`, ``, "\x00",
		"{\"version\":1,\"gen\":2,\"sections\":{\n\"a\":{\"k\":\"v,\\n\\\"b\\\":2\"},\n\"b\":[1,2]\n}}\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "state.json")
		old, _ := filepath.Glob(path + ".corrupt-*")
		for _, o := range old {
			os.Remove(o)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		s, err := Open(path, Options{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		err = s.View(ctx, func(*Tx) error { return nil })
		var ce *CorruptError
		var ne *NewerVersionError
		switch {
		case errors.As(err, &ne):
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatalf("a newer file was touched: %q", data)
			}
			return
		case errors.As(err, &ce):
			if got, rerr := os.ReadFile(ce.MovedTo); rerr != nil || !bytes.Equal(got, data) {
				t.Fatalf("corrupt %q not kept byte for byte at %s: %v", data, ce.MovedTo, rerr)
			}
			return
		case err != nil:
			t.Fatalf("%q: untyped refusal %v", data, err)
		}
		if len(bytes.TrimSpace(data)) > 0 && !json.Valid(data) {
			t.Fatalf("read %q, which is not JSON, as a state file", data)
		}
		got := sectionsOf(t, s)
		// The canonical splitter is a shortcut: whatever encoding/json
		// reads from the same bytes must be the same sections.
		var doc struct {
			Version  int                        `json:"version"`
			Sections map[string]json.RawMessage `json:"sections"`
		}
		if json.Unmarshal(data, &doc) == nil {
			want := map[string]string{}
			for k, v := range doc.Sections {
				var b bytes.Buffer
				if json.Compact(&b, v) == nil {
					want[k] = b.String()
				}
			}
			if !equalSections(got, want) {
				t.Fatalf("the fast reader and encoding/json disagree on %q:\n fast %v\n json %v", data, got, want)
			}
		}
		if err := s.Update(ctx, func(tx *Tx) error { return tx.Put("fuzz", map[string]int{"n": 1}) }); err != nil {
			t.Fatalf("accepted %q but cannot write it: %v", data, err)
		}
		written, _ := os.ReadFile(path)
		if !json.Valid(written) {
			t.Fatalf("the store wrote invalid JSON %q (from %q)", written, data)
		}
		fresh, _ := Open(path, Options{Clock: clk})
		if err := fresh.View(ctx, func(*Tx) error { return nil }); err != nil {
			t.Fatalf("the store's own file is refused: %v\n in  %q\n out %q", err, data, written)
		}
		got["fuzz"] = `{"n":1}`
		if again := sectionsOf(t, fresh); !equalSections(got, again) {
			t.Fatalf("a write lost sections of %q:\n before %v\n after  %v", data, got, again)
		}
	})
}
