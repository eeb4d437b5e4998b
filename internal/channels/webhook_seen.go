package channels

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/statefile"
)

// ErrReplayStateLost refuses a request signed before this process started
// when the replay cache's file was found corrupt: what it held is unknown,
// so a replay of such a request cannot be ruled out. The sender signs anew.
var ErrReplayStateLost = errors.New("webhook: replay state was lost at restart; re-sign the request")

// errSeenPersist refuses a request whose signature could not be recorded:
// accepting it would let it be replayed after a restart.
var errSeenPersist = errors.New("webhook: cannot record the request for replay protection")

// seenHeader opens the replay-cache file; each further line is
// "<MAC hex> <expiry unix seconds>".
const seenHeader = "raven webhook seen v1"

// seenFile keeps the replay cache on disk: an append-only log of accepted
// signatures, fsynced before the request is accepted, rewritten with the
// live entries only at start and whenever it holds twice the capacity, so
// it stays bounded.
type seenFile struct {
	path     string
	capacity int
	log      *slog.Logger
	f        *os.File
	lines    int
}

// loadSeen reads the cache at path into seen, dropping entries expired at
// now, and rewrites the file with the live ones. A torn last line (a crash
// mid-append) is skipped; anything else unreadable moves the whole file
// aside, reported as movedTo.
func loadSeen(path string, capacity int, now time.Time, log *slog.Logger, seen map[string]time.Time) (sf *seenFile, movedTo string, err error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, "", fmt.Errorf("channels: webhook replay state %s: %w", path, err)
	default:
		if perr := parseSeen(b, now, log, seen); perr != nil {
			clear(seen)
			movedTo, err = statefile.MoveAside(path, now)
			if err != nil {
				return nil, "", fmt.Errorf("channels: webhook replay state %s is corrupt (%v) and cannot be moved aside: %w", path, perr, err)
			}
			log.Error("webhook: replay state corrupt; moved aside, refusing requests signed before now", "path", path, "moved_to", movedTo, "err", perr)
		}
	}
	sf = &seenFile{path: path, capacity: capacity, log: log}
	if err := sf.compact(seen, now); err != nil {
		return nil, "", err
	}
	return sf, movedTo, nil
}

func parseSeen(b []byte, now time.Time, log *slog.Logger, seen map[string]time.Time) error {
	header, rest, ok := bytes.Cut(b, []byte{'\n'})
	if !ok || string(header) != seenHeader {
		return errors.New("missing or unknown header")
	}
	if i := bytes.LastIndexByte(rest, '\n'); i+1 < len(rest) {
		// An append cut short: never fsynced, so never acknowledged.
		log.Warn("webhook: replay state ends in a torn line; skipped", "bytes", len(rest)-i-1)
		rest = rest[:i+1]
	}
	for n, line := range strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n") {
		if line == "" && len(rest) == 0 {
			break
		}
		sig, exp, ok := strings.Cut(line, " ")
		unix, err := strconv.ParseInt(exp, 10, 64)
		if raw, herr := hex.DecodeString(sig); !ok || err != nil || herr != nil || len(raw) != 32 {
			return fmt.Errorf("line %d is not a cache entry", n+2)
		}
		if expiry := time.Unix(unix, 0); now.Before(expiry) {
			seen[sig] = expiry
		}
	}
	return nil
}

// compact rewrites the file atomically with the live entries of seen and
// reopens it for appending.
func (sf *seenFile) compact(seen map[string]time.Time, now time.Time) error {
	if sf.f != nil {
		sf.f.Close()
		sf.f = nil
	}
	keys := make([]string, 0, len(seen))
	for k, exp := range seen {
		if now.Before(exp) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var buf bytes.Buffer
	buf.WriteString(seenHeader + "\n")
	for _, k := range keys {
		fmt.Fprintf(&buf, "%s %d\n", k, seen[k].Unix())
	}
	if err := statefile.WriteAtomic(sf.path, buf.Bytes(), 0o600); err != nil {
		return fmt.Errorf("channels: webhook replay state: %w", err)
	}
	f, err := os.OpenFile(sf.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("channels: webhook replay state: %w", err)
	}
	sf.f, sf.lines = f, 1+len(keys)
	return nil
}

// record appends sig and fsyncs it, compacting first when the file has
// grown to twice the capacity.
func (sf *seenFile) record(seen map[string]time.Time, sig string, expiry, now time.Time) error {
	if sf.f == nil {
		return fmt.Errorf("%w: state file closed", errSeenPersist)
	}
	if sf.lines >= 1+2*sf.capacity {
		if err := sf.compact(seen, now); err != nil {
			return fmt.Errorf("%w: %w", errSeenPersist, err)
		}
	}
	if _, err := fmt.Fprintf(sf.f, "%s %d\n", sig, expiry.Unix()); err != nil {
		return fmt.Errorf("%w: %w", errSeenPersist, err)
	}
	if err := sf.f.Sync(); err != nil {
		return fmt.Errorf("%w: %w", errSeenPersist, err)
	}
	sf.lines++
	return nil
}

func (sf *seenFile) close() error {
	if sf == nil || sf.f == nil {
		return nil
	}
	err := sf.f.Close()
	sf.f = nil
	return err
}
