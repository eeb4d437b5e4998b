package cron

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// SystemZone returns the IANA name of the machine's time zone ($TZ, else
// the /etc/localtime link), or "UTC" when it cannot be named. A job stores
// the name, never "Local", so it means the same on every machine and after
// the host's zone changes.
func SystemZone() string {
	if tz := strings.TrimPrefix(os.Getenv("TZ"), ":"); tz != "" {
		if _, err := time.LoadLocation(tz); err == nil && tz != "Local" {
			return tz
		}
	}
	if target, err := filepath.EvalSymlinks("/etc/localtime"); err == nil {
		if i := strings.Index(target, "zoneinfo/"); i >= 0 {
			name := target[i+len("zoneinfo/"):]
			if _, err := time.LoadLocation(name); err == nil {
				return name
			}
		}
	}
	return "UTC"
}
