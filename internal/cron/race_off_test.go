//go:build !race

package cron

const raceEnabled = false
