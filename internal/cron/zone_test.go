package cron

import "testing"

func TestSystemZoneFromTZ(t *testing.T) {
	t.Setenv("TZ", "Europe/Berlin")
	if got := SystemZone(); got != "Europe/Berlin" {
		t.Fatalf("SystemZone = %q", got)
	}
	t.Setenv("TZ", "Not/AZone")
	if got := SystemZone(); got == "Not/AZone" || got == "Local" {
		t.Fatalf("invalid $TZ accepted: %q", got)
	}
}
