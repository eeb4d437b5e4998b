//go:build race

package simulate

// raceEnabled: the wall-time figure gets a generous bound under the race detector.
const raceEnabled = true
