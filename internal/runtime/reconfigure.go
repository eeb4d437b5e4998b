package runtime

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/tools"
)

// LiveKeys are the config keys a running runtime applies without a
// restart, each where it is read at use time:
//
//   - channels.forward: resolved at every delivery (nudges, cron, heartbeat).
//   - heartbeat.interval: the heartbeat's wait in progress ends and the next
//     one is a new interval from the change.
//   - log.level: through Options.LogLevel (when the entry point gives one).
//   - tools.exec.* and tools.ask_user.timeout: the tool is registered anew
//     (or removed) in the agent's registry; a turn already running keeps
//     the tool it started with.
//   - tools.search_threshold: read by the registry at each model step.
//
// Every other key is wired into a part at Build (the model, the listeners,
// the Sentinel's policy and loop, cron's service, the tools, the agent) and
// needs a restart.
func LiveKeys() []string {
	return []string{"channels.forward", "heartbeat.interval", "log.level",
		"tools.exec.enabled", "tools.exec.timeout", "tools.exec.max_output", "tools.exec.deny", "tools.ask_user.timeout",
		"tools.search_threshold"}
}

// Reconfigured is what Reconfigure did with a new config.
type Reconfigured struct {
	// Applied are the live keys whose values changed, now in effect.
	Applied []string
	// RestartNeeded are the keys whose new value differs from the one the
	// runtime was built with and that only a restart applies.
	RestartNeeded []string
}

// Reconfigure applies next's live keys and reports the rest. next must be
// valid (config.Load validated it). Each applied key and each key needing a
// restart is logged.
func (r *Runtime) Reconfigure(next config.Config) (Reconfigured, error) {
	r.reconfMu.Lock()
	defer r.reconfMu.Unlock()
	live := LiveKeys()
	if r.logLevel == nil {
		live = slices.DeleteFunc(live, func(k string) bool { return k == "log.level" })
	}
	cur := r.Config()
	var out Reconfigured
	for _, k := range config.Changed(cur, next) {
		if slices.Contains(live, k) {
			out.Applied = append(out.Applied, k)
		}
	}
	for _, k := range config.Changed(r.cfg, next) {
		if !slices.Contains(live, k) {
			out.RestartNeeded = append(out.RestartNeeded, k)
		}
	}
	eff, err := config.Apply(cur, next, out.Applied)
	if err != nil {
		return Reconfigured{}, err
	}
	// Built before anything is applied: a tool that cannot be built
	// refuses the whole reload.
	var exec *tools.Exec
	execChanged := slices.ContainsFunc(out.Applied, func(k string) bool { return strings.HasPrefix(k, "tools.exec.") })
	if ec := eff.Tools.Exec; execChanged && ec.Enabled {
		if exec, err = tools.NewExec(r.workspace, ec.Timeout.D(), ec.MaxOutput, ec.Deny); err != nil {
			return Reconfigured{}, fmt.Errorf("tools.exec: %w", err)
		}
	}
	if execChanged {
		if exec != nil {
			r.toolReg.Register(exec)
		} else {
			r.toolReg.Unregister((&tools.Exec{}).Name())
		}
	}
	for _, k := range out.Applied {
		switch k {
		case "tools.ask_user.timeout":
			r.toolReg.Register(questions.NewAskUserTool(r.broker, eff.Tools.AskUser.Timeout.D()))
		case "tools.search_threshold":
			r.toolReg.SetSearchThreshold(eff.Tools.SearchThreshold)
		case "heartbeat.interval":
			r.heartbeat.SetInterval(eff.Heartbeat.Interval.D())
		case "log.level":
			var lvl slog.Level
			if err := lvl.UnmarshalText([]byte(strings.ToUpper(eff.Log.Level))); err == nil {
				r.logLevel.Set(lvl)
			}
		}
	}
	r.effective.Store(&eff)
	for _, k := range out.Applied {
		key, _ := config.LookupKey(k)
		val := key.Text(eff)
		if key.Secret {
			val = "(secret)"
		}
		r.log.Info("config: applied live", "key", k, "value", val)
	}
	for _, k := range out.RestartNeeded {
		r.log.Warn("config: changed; restart needed to apply", "key", k)
	}
	return out, nil
}
