package e2e

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Zone is a fixed-offset time zone whose local time was 13:10 when it was
// made: every raven command of a Sentinel test runs in it (TZ=Path), so
// the default quiet hours (23:00-07:00), the plan's day window
// (09:00-21:00), the local date and the hour of the day are stable for the
// whole run whatever the wall clock, and no config key has to move away
// from its default for it.
type Zone struct {
	// Path is a TZif file of the zone, for TZ.
	Path string
	// Loc is the same zone for the test process.
	Loc *time.Location
}

// middayClock is the local time of day a Zone starts at: far from the
// quiet hours, inside the plan's day, and 50 minutes before the hour turns.
const middayClock = 13*time.Hour + 10*time.Minute

// WriteMiddayZone writes the Zone's TZif file into dir.
func WriteMiddayZone(dir string, now time.Time) (Zone, error) {
	utc := now.UTC()
	sinceMidnight := time.Duration(utc.Hour())*time.Hour + time.Duration(utc.Minute())*time.Minute + time.Duration(utc.Second())*time.Second
	off := middayClock - sinceMidnight // -10h50m .. +13h10m
	secs := int32(off / time.Second)
	// TZif version 1, one local time type, no transitions.
	var b []byte
	b = append(b, "TZif"...)
	b = append(b, make([]byte, 16)...)             // version 0 (v1) and padding
	for _, n := range []uint32{0, 0, 0, 0, 1, 4} { // isut, isstd, leap, time, type, char counts
		b = binary.BigEndian.AppendUint32(b, n)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(secs))
	b = append(b, 0, 0) // not DST, abbreviation at 0
	b = append(b, "E2E\x00"...)
	path := filepath.Join(dir, "midday.tzif")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return Zone{}, fmt.Errorf("e2e: write zone: %w", err)
	}
	loc, err := time.LoadLocationFromTZData("E2E", b)
	if err != nil {
		return Zone{}, fmt.Errorf("e2e: zone: %w", err)
	}
	return Zone{Path: path, Loc: loc}, nil
}
