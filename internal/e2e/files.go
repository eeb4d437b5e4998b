package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
)

// WriteFile writes content to rel under the data dir (creating parents),
// e.g. WriteFile("workspace/HEARTBEAT.md", "- check the build\n").
func (e *Env) WriteFile(rel, content string) {
	e.T.Helper()
	path := e.Path(rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		e.T.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		e.T.Fatal(err)
	}
}

// ReadFile returns rel under the data dir, "" if it does not exist.
func (e *Env) ReadFile(rel string) string {
	e.T.Helper()
	b, err := os.ReadFile(e.Path(rel))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		e.T.Fatal(err)
	}
	return string(b)
}

// ReadJSONL decodes each line of rel under the data dir (runs.jsonl,
// feedback.jsonl…); a missing file is no lines, a bad line fails the test.
func (e *Env) ReadJSONL(rel string) []map[string]any {
	e.T.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader([]byte(e.ReadFile(rel))))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			e.T.Fatalf("e2e: %s line %d: %v", rel, n, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		e.T.Fatal(err)
	}
	return out
}
