package e2e

import (
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/usage"
)

// §6 (issue 12): a `raven chat -m` turn against the fake model server is
// recorded; `raven usage --json` shows its tokens under origin user and
// model openai/fake, and grouped by model and day too.
func TestUsageAfterChatTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.MustRun("chat", "-m", "what is on today?")
	reqs := e.Model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("model requests:\n%s", e.Model)
	}
	var rep usage.Report
	e.MustRun("usage", "--json").JSON(t, &rep)
	if len(rep.Rows) != 1 || rep.Rows[0].Key != "user" || rep.Rows[0].Calls != 1 ||
		rep.Rows[0].Tokens.Input == 0 || rep.Rows[0].Tokens.Output == 0 || rep.Total.Tokens != rep.Rows[0].Tokens {
		t.Fatalf("usage --json after one chat turn: %+v", rep)
	}
	e.MustRun("usage", "--json", "--by", "model").JSON(t, &rep)
	if len(rep.Rows) != 1 || rep.Rows[0].Key != "openai/fake" {
		t.Fatalf("usage --by model: %+v", rep)
	}
	if r := e.Run("usage", "--since", "yesterday-ish"); r.Code != 2 || !strings.Contains(r.Stderr, "--since wants a date") {
		t.Fatalf("bad --since:\n%s", r)
	}
}

// §2 (issue 11): with a cap and a price configured, `raven usage` shows the
// spend against each cap and the cost of the calls.
func TestUsageShowsCaps(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.SetConfig("usage.caps", `{"ambient":{"daily_tokens":200000},"user":{"monthly_usd":5}}`)
	e.SetConfig("usage.prices", `{"openai/fake":{"input":1000,"output":2000}}`)
	e.MustRun("chat", "-m", "hello")
	out := e.MustRun("usage").Stdout
	for _, want := range []string{"ambient", "day", "200000 tokens", "user", "month", "$5.00", "caps (ambient work pauses"} {
		if !strings.Contains(out, want) {
			t.Fatalf("raven usage lacks %q:\n%s", want, out)
		}
	}
	var rep usage.Report
	e.MustRun("usage", "--json").JSON(t, &rep)
	if len(rep.Caps) != 2 || rep.Total.CostUSD <= 0 {
		t.Fatalf("caps or cost missing: %+v", rep)
	}
	for _, c := range rep.Caps {
		if c.Scope == "user" && (c.Used <= 0 || c.Enforced) {
			t.Fatalf("user cap: %+v (spend counted, shown only)", c)
		}
	}
}

// §2 (issue 11): a heartbeat tick that spends much and delivers nothing is
// a silent tick `raven usage` counts, and `raven doctor` warns once such
// ticks dominate the heartbeat's spend.
func TestDoctorWarnsOnSilentTickSpend(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	e.WriteFile("workspace/HEARTBEAT.md", "# Heartbeat\n## Tasks\n- At 9:00 on weekdays, send me the day's agenda.\n")
	// An answer that is no decision (about 110,000 output tokens): skipped.
	e.Model.On(fakeopenai.Offers("heartbeat_decision"), fakeopenai.Always(fakeopenai.Text(strings.Repeat("mull ", 88_000))))
	e.MustRun("heartbeat", "run")
	var rep usage.Report
	e.MustRun("usage", "--json").JSON(t, &rep)
	if len(rep.Rows) != 1 || rep.Rows[0].Key != "heartbeat" || rep.Rows[0].SilentCalls != 1 {
		t.Fatalf("the heartbeat's silent tick is not in raven usage: %+v", rep)
	}
	r := e.Run("doctor")
	if !strings.Contains(r.Stdout, "silent ticks dominate spend") || !strings.Contains(r.Stdout, "heartbeat: 100%") {
		t.Fatalf("doctor did not warn on silent-tick spend:\n%s", r)
	}
}
