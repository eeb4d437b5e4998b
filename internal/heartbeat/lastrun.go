package heartbeat

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/raven-agent/raven/internal/statefile"
)

// LastRunPath is where a data directory keeps the last heartbeat outcome.
func LastRunPath(dataDir string) string { return filepath.Join(dataDir, "heartbeat", "last_run.json") }

// writeLastRun records o for `raven heartbeat status`. One record, replaced
// atomically; losing a race with another process only loses a status line.
func writeLastRun(path string, o Outcome) error {
	data, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return fmt.Errorf("heartbeat: encode last run: %w", err)
	}
	if err := statefile.WriteAtomic(path, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("heartbeat: record last run: %w", err)
	}
	return nil
}

// ReadLastRun returns the recorded last outcome; ok is false when none was
// recorded yet.
func ReadLastRun(path string) (o Outcome, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return o, false, nil
	}
	if err != nil {
		return o, false, fmt.Errorf("heartbeat: read last run: %w", err)
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return o, false, fmt.Errorf("heartbeat: %s is not a heartbeat record: %w", path, err)
	}
	return o, true, nil
}
