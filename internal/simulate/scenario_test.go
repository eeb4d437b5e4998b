package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/config"
)

func TestExamplesLoad(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "scenarios", "*.yaml"))
	if err != nil || len(files) < len(examples) {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, f := range files {
		sc, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if sc.Name == "" || sc.Description == "" {
			t.Errorf("%s: name and description document the scenario", f)
		}
	}
}

func TestParseRefusesBadScenarios(t *testing.T) {
	cases := []struct {
		name, in string
		json     bool
		want     string
	}{
		{"unknown key names its line", "name: x\nowner:\n  attachd: []\n", false, "line 3: field attachd not found"},
		{"unknown JSON key", `{"name":"x","ownr":{}}`, true, `unknown field "ownr"`},
		{"bad planner", "planner: {kind: oracle}\n", false, `planner.kind "oracle"`},
		{"bad zone", "timezone: Mars/Olympus\n", false, "timezone"},
		{"days out of range", "days: 400\n", false, "days 400"},
		{"bad time of day", "owner: {messages: [{at: '25:00', text: hi}]}\n", false, "owner.messages[0].at"},
		{"message without text", "owner: {messages: [{at: '09:00'}]}\n", false, "owner.messages[0].text is required"},
		{"bad weekday", "owner: {attached: [{days: [someday], from: '09:00', to: '10:00'}]}\n", false, `day "someday"`},
		{"negative odds", "owner: {reactions: {default: {accept: -1}}}\n", false, "odds must be >= 0"},
		{"bad deadline", "deadlines: [{due: friday, text: dentist}]\n", false, "deadlines[0]"},
		{"outage backwards", "planner: {outages: [{day: 0, from: '10:00', to: '09:00'}]}\n", false, "to must be after from"},
		{"script action", "planner: {kind: scripted, script: [{day: 0, at: '09:00', action: shout, message: x}]}\n", false, `action "shout"`},
		{"travel day out of range", "travel: [{day: 9, at: '10:00', timezone: UTC}]\n", false, "travel[0].day 9"},
		{"not yaml", "name: [unclosed\n", false, "yaml"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.in), c.json)
			if !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrScenario containing %q", err, c.want)
			}
		})
	}
}

func TestLoadBoundsTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(p, []byte("name: x\n"+strings.Repeat("# pad\n", MaxScenarioBytes/6+10)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p); !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), "1 MiB") {
		t.Fatalf("err = %v", err)
	}
}

// A config override goes through `raven config set`'s keys: an unknown
// key or a bad value is the scenario's error.
func TestConfigOverrides(t *testing.T) {
	for _, c := range []struct{ key, value, want string }{
		{"sentinel.policy.nope", "1", "unknown key"},
		{"sentinel.policy.day_quota", "many", "day_quota"},
	} {
		sc, err := Parse([]byte("days: 1\nconfig: {"+c.key+": "+c.value+"}\n"), false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), sc, Options{Dir: t.TempDir()})
		if !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%s: err = %v", c.key, c.value, err)
		}
	}
}

// The same scenario and seed give the same report; another seed gives the
// owner other choices.
func TestRunsAreReproducible(t *testing.T) {
	sc, err := Load(filepath.Join("..", "..", "examples", "scenarios", "weekend.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(seed int64) string {
		rep, err := Run(context.Background(), sc, Options{Dir: t.TempDir(), Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		rep.WallMillis = 0
		b, _ := json.Marshal(rep)
		return string(b)
	}
	a, b := run(0), run(0)
	if a != b {
		t.Fatalf("two runs with one seed differ:\n%s\n%s", a, b)
	}
	if c := run(99); c == a {
		t.Fatal("another seed changed nothing: the owner's choices ignore the seed")
	}
}

// --compare: the same owner under a stricter config gets fewer nudges.
func TestCompareRunsTheSameOwnerUnderTwoConfigs(t *testing.T) {
	sc, err := Load(filepath.Join("..", "..", "examples", "scenarios", "weekend.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	other := config.Default()
	other.Sentinel.Policy.DayQuota = 2
	cmp, err := Compare(context.Background(), sc, Options{Dir: t.TempDir()}, other, "strict.json")
	if err != nil {
		t.Fatal(err)
	}
	if cmp.B.Config != "strict.json" || cmp.A.Config != "default" || cmp.B.DayQuota != 2 {
		t.Fatalf("configs: A %s (%d), B %s (%d)", cmp.A.Config, cmp.A.DayQuota, cmp.B.Config, cmp.B.DayQuota)
	}
	if cmp.B.Nudges.MaxDeliveredPerDay > 2 || cmp.A.Nudges.MaxDeliveredPerDay <= 2 {
		t.Fatalf("max per day: A %d, B %d", cmp.A.Nudges.MaxDeliveredPerDay, cmp.B.Nudges.MaxDeliveredPerDay)
	}
	if cmp.A.Nudges.Proposed != cmp.B.Nudges.Proposed {
		t.Fatalf("the planner proposed %d vs %d: the two runs must see the same ticks", cmp.A.Nudges.Proposed, cmp.B.Nudges.Proposed)
	}
	var out strings.Builder
	if err := WriteCompare(&out, cmp.A, cmp.B); err != nil || !strings.Contains(out.String(), "strict.json") {
		t.Fatalf("side by side:\n%s (%v)", out.String(), err)
	}
}

// The travelling owner's runtime restarts in the new zone, and quiet hours
// follow them.
func TestTravellingOwnerChangesZone(t *testing.T) {
	rep := example(t, "travelling")
	if len(rep.Zones) != 2 || rep.Zones[1] != "America/New_York" || len(rep.Travel) != 1 {
		t.Fatalf("zones %v, travel %+v", rep.Zones, rep.Travel)
	}
	if rep.Ticks.Total <= 7*48 {
		t.Fatalf("%d ticks: flying west makes the week 5h longer", rep.Ticks.Total)
	}
}

// A scenario reads the same from JSON as from YAML.
func TestJSONScenarioMatchesYAML(t *testing.T) {
	for _, name := range []string{"nightowl", "deadlines", "travelling"} {
		y, err := Load(filepath.Join("..", "..", "examples", "scenarios", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(y)
		if err != nil {
			t.Fatal(err)
		}
		j, err := Parse(b, true)
		if err != nil {
			t.Fatalf("%s as JSON: %v\n%s", name, err, b)
		}
		b2, _ := json.Marshal(j)
		if string(b) != string(b2) {
			t.Fatalf("%s: JSON and YAML differ:\n%s\n%s", name, b, b2)
		}
	}
}
