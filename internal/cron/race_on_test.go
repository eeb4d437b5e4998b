//go:build race

package cron

// raceEnabled: timing figures are not held under the race detector.
const raceEnabled = true
