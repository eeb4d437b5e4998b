package statefile

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

const tempInfix = ".tmp-"

// TempMinAge is how old a temp file must be before SweepTemp removes it
// when its writer may still be alive: a rewrite takes milliseconds.
const TempMinAge = time.Minute

// tempName matches the temp files of interrupted rewrites: ours
// (".<base>.tmp-<pid>-<random>") and, by age only, those of older builds
// (".<base>.tmp-<random>", feedback's ".<base>.trim-<random>").
var tempName = regexp.MustCompile(`^\..+\.(?:tmp-(?:(\d+)-)?|trim-)\d+$`)

// SweepTemp removes from dir the temp files left by atomic rewrites that
// were interrupted (kill -9, power loss): only names of our pattern, only
// regular files, and only when their writer's pid is gone or the file is
// older than TempMinAge. It returns what it removed. A missing dir is
// empty. Call it at start-up for each directory Raven rewrites files in.
func SweepTemp(dir string, now time.Time) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("statefile: sweep %s: %w", dir, err)
	}
	var removed []string
	var errs []error
	for _, e := range ents {
		m := tempName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // gone meanwhile: renamed into place by its writer
		}
		dead := false
		if m[1] != "" {
			if pid, err := strconv.Atoi(m[1]); err == nil && pid != os.Getpid() {
				dead = !ProcessAlive(pid)
			}
		}
		if !dead && now.Sub(info.ModTime()) < TempMinAge {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("statefile: sweep %s: %w", dir, err)
	}
	return removed, nil
}

// ProcessAlive reports whether pid names a live process on this host.
// Only ESRCH means gone: EPERM is a live process of another user.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

// SweepTempDirs runs SweepTemp on each dir, logging what it removed and
// what it could not; it returns how many files went. It is the start-up
// call (dirs: config.Paths.StateDirs()).
func SweepTempDirs(now time.Time, log *slog.Logger, dirs ...string) int {
	n := 0
	for _, d := range dirs {
		removed, err := SweepTemp(d, now)
		for _, p := range removed {
			log.Info("statefile: removed temp file of an interrupted write", "path", p)
		}
		n += len(removed)
		if err != nil {
			log.Warn("statefile: temp sweep incomplete", "dir", d, "err", err)
		}
	}
	return n
}
