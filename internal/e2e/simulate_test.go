package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// simReport is the part of `raven simulate --json` the figures read: the
// JSON contract, decoded independently of the package that writes it.
type simReport struct {
	Scenario string `json:"scenario"`
	DayQuota int    `json:"day_quota"`
	Ticks    struct {
		Total               int `json:"total"`
		Quiet               int `json:"quiet"`
		QuietModelCalls     int `json:"quiet_model_calls"`
		UnchangedModelCalls int `json:"unchanged_model_calls"`
		PlannerCalls        int `json:"planner_calls"`
	} `json:"ticks"`
	Nudges struct {
		Proposed      int            `json:"proposed"`
		Delivered     int            `json:"delivered"`
		DeniedByLayer map[string]int `json:"denied_by_layer"`
	} `json:"nudges"`
	Quiet struct {
		NonHigh int `json:"non_high_deliveries"`
	} `json:"quiet_hours"`
	Duplicates int `json:"duplicate_deliveries"`
	Adaptive   struct {
		Start float64 `json:"start"`
		End   float64 `json:"end"`
	} `json:"adaptive"`
	Model struct {
		Calls    int `json:"calls"`
		ByOrigin map[string]struct {
			Calls int `json:"calls"`
		} `json:"by_origin"`
	} `json:"model"`
	PerDay []struct {
		Date      string `json:"date"`
		Delivered int    `json:"delivered"`
	} `json:"per_day"`
}

func scenarioPath(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "examples", "scenarios", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSimulateDisengagedOwnerHoldsTheFigures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	r := e.MustRun("simulate", scenarioPath(t, "disengaged.yaml"), "--json")
	var rep simReport
	r.JSON(t, &rep)
	if rep.Scenario != "disengaged owner" || len(rep.PerDay) != 7 || rep.Nudges.Proposed == 0 {
		t.Fatalf("report: %+v\n%s", rep, r)
	}
	for _, d := range rep.PerDay {
		if d.Delivered > rep.DayQuota {
			t.Errorf("%s: %d delivered, quota %d", d.Date, d.Delivered, rep.DayQuota)
		}
	}
	if rep.Adaptive.End >= rep.Adaptive.Start {
		t.Errorf("multiplier %.2f → %.2f: did not tighten", rep.Adaptive.Start, rep.Adaptive.End)
	}
	if rep.Quiet.NonHigh != 0 || rep.Duplicates != 0 || rep.Ticks.QuietModelCalls != 0 || rep.Ticks.UnchangedModelCalls != 0 {
		t.Errorf("figures: quiet non-high %d, duplicates %d, quiet-tick calls %d, unchanged-tick calls %d",
			rep.Quiet.NonHigh, rep.Duplicates, rep.Ticks.QuietModelCalls, rep.Ticks.UnchangedModelCalls)
	}
	if rep.Nudges.DeniedByLayer["day_quota"] == 0 {
		t.Errorf("denied by layer: %v", rep.Nudges.DeniedByLayer)
	}
	if n := len(e.Model.Requests()); n != 0 {
		t.Errorf("the stub planner run sent %d requests to the configured model", n)
	}
}

// planner kind "model": the Sentinel's calls go to the configured model
// (here the fake server on loopback), and the report counts exactly them.
func TestSimulateWithTheConfiguredModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	sc := filepath.Join(t.TempDir(), "idle-model.yaml")
	if err := os.WriteFile(sc, []byte("name: idle with a model\ndays: 1\nplanner: {kind: model}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := len(e.Model.Requests())
	r := e.MustRun("simulate", sc, "--json")
	var rep simReport
	r.JSON(t, &rep)
	reqs := e.Model.Requests()[before:]
	planner := 0
	for _, q := range reqs {
		if q.HasTool("planner_decision") {
			planner++
		}
	}
	if planner == 0 || planner != rep.Model.ByOrigin["sentinel"].Calls || len(reqs) != rep.Model.Calls {
		t.Fatalf("model saw %d requests (%d planner), report counted %d (%v)\n%s", len(reqs), planner, rep.Model.Calls, rep.Model.ByOrigin, r)
	}
	if rep.Ticks.QuietModelCalls != 0 || rep.Ticks.UnchangedModelCalls != 0 {
		t.Fatalf("calls on quiet/unchanged ticks: %+v", rep.Ticks)
	}
}

func TestSimulateCompareAndBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	strict := filepath.Join(t.TempDir(), "strict.json")
	if err := os.WriteFile(strict, []byte(`{"sentinel":{"policy":{"day_quota":2}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.MustRun("simulate", scenarioPath(t, "weekend.yaml"), "--compare", strict, "--days", "1")
	for _, want := range []string{"same owner, same seed", "default", "strict.json", "quota 2", "quota 6"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("side by side lacks %q:\n%s", want, r.Stdout)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nowner:\n  attachd: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = e.Run("simulate", bad)
	if r.Code != 2 || !strings.Contains(r.Stderr, "line 3: field attachd not found") {
		t.Fatalf("a scenario with an unknown key:\n%s", r)
	}
}
