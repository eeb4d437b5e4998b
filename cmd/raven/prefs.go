package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// prefsView is what `raven sentinel prefs --json` prints.
type prefsView struct {
	Path        string                 `json:"path"`
	Exists      bool                   `json:"exists"`
	Preferences policy.Overrides       `json:"preferences"`
	Effective   []policy.PreferenceRow `json:"effective"`
}

func newSentinelPrefsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "prefs",
		Short: "Show the owner's preferences (sentinel/preferences.json) and the effective policy",
		Long: "Preferences tighten the configured nudge policy: more quiet hours and do-not-disturb windows,\n" +
			"muted topics, lower quotas, longer cooldowns. Raven learns some of them from the nudges you keep\n" +
			"dismissing; `prefs set` and `prefs unset` edit them. A value that would loosen the configured\n" +
			"policy is refused. Keys: " + strings.Join(policy.PreferenceKeys(), ", ") + ".",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			path := p.Preferences()
			ov, err := policy.ReadPreferences(path)
			if err != nil {
				return err
			}
			raw, readErr := os.ReadFile(path)
			v := prefsView{Path: path, Exists: readErr == nil, Preferences: ov, Effective: policy.EffectivePreferences(cfg.Sentinel.Policy, ov)}
			if asJSON || g.json {
				return printJSON(cmd.OutOrStdout(), v)
			}
			printPrefs(cmd.OutOrStdout(), v)
			if len(raw) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "\n%s:\n%s", path, raw)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	cmd.AddCommand(newSentinelPrefsSetCmd(g), newSentinelPrefsUnsetCmd(g))
	return cmd
}

func printPrefs(w io.Writer, v prefsView) {
	state := "not written yet (no preferences)"
	if v.Exists {
		state = "present"
	}
	fmt.Fprintf(w, "preferences: %s — %s\n", v.Path, state)
	fmt.Fprintf(w, "%-19s %-14s %-22s %s\n", "KEY", "CONFIGURED", "PREFERENCE", "EFFECTIVE")
	for _, r := range v.Effective {
		pref := r.Preference
		if pref == "" {
			pref = "-"
		}
		conf := r.Configured
		if conf == "" {
			conf = "-"
		}
		eff := r.Effective
		if eff == "" {
			eff = "-"
		}
		fmt.Fprintf(w, "%-19s %-14s %-22s %s\n", r.Key, conf, pref, eff)
	}
}

// prefsErr maps an editor error to its exit code: bad input is a usage
// error (2), anything else (a locked or unwritable file) a failure.
func prefsErr(err error) error {
	if errors.Is(err, policy.ErrLoosen) || errors.Is(err, policy.ErrUnknownPreference) || errors.Is(err, policy.ErrBadPreference) {
		return usageErr(err)
	}
	return err
}

func newSentinelPrefsSetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set a preference (tighten-only; dnd and muted_topics add to their lists)",
		Example: "  raven sentinel prefs set quiet_hours 22:00-07:00\n" +
			"  raven sentinel prefs set dnd 12:00-13:00\n" +
			"  raven sentinel prefs set muted_topics crypto-prices\n" +
			"  raven sentinel prefs set day_quota 3",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			key, value := args[0], args[1]
			if _, err := policy.UpdatePreferences(cmd.Context(), p.Preferences(), func(o *policy.Overrides) (bool, error) {
				return true, o.Set(cfg.Sentinel.Policy, key, value)
			}); err != nil {
				return prefsErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s set in %s\n", key, p.Preferences())
			return nil
		},
	}
}

func newSentinelPrefsUnsetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "unset KEY",
		Short: "Remove a preference (back to the configured policy); dnd and muted_topics clear their lists",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			key := args[0]
			var was bool
			if _, err := policy.UpdatePreferences(cmd.Context(), p.Preferences(), func(o *policy.Overrides) (bool, error) {
				var err error
				was, err = o.Unset(key)
				return was, err
			}); err != nil {
				return prefsErr(err)
			}
			if !was {
				fmt.Fprintf(cmd.OutOrStdout(), "%s was not set\n", key)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s removed from %s\n", key, p.Preferences())
			return nil
		},
	}
}
