package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A mistyped --data-dir finds nothing and creates nothing; a query with
// no words is a usage error whatever the dir.
func TestMemoryCLIMissingDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nosuch")
	cases := []struct {
		args []string
		out  string
		code int
	}{
		{[]string{"memory", "search", "dentist"}, "No memory matches \"dentist\".\n", 0},
		{[]string{"memory", "log"}, "Raven has written nothing to MEMORY.md yet.\n", 0},
		{[]string{"memory", "log", "--json"}, "[]\n", 0},
		{[]string{"memory", "search", "?!"}, "", 2},
	}
	for _, c := range cases {
		out, err := runRaven(t, "", append([]string{"--data-dir", dir}, c.args...)...)
		if got := exitCode(err); got != c.code || out != c.out {
			t.Errorf("%v: exit %d %q, want %d %q (%v)", c.args, got, out, c.code, c.out, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the data dir was created: %v", err)
	}
}
