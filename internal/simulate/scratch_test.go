package simulate

import (
	"context"
	"os"
	"testing"
)

func TestScratch(t *testing.T) {
	sc, err := Load("../../examples/scenarios/" + os.Getenv("SC"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), sc, Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep.WriteText(os.Stdout)
}
