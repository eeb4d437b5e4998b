package config

import (
	"errors"
	"reflect"
	"strings"

	"github.com/raven-agent/raven/internal/configtype"
	"github.com/raven-agent/raven/internal/sentinel"
	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// SentinelConfig is the "sentinel" section; package sentinel owns it and
// its defaults (its policy sub-section is policy.Config, composed).
type SentinelConfig = sentinel.Config

// validateSentinel names an invalid sentinel setting by its full dotted key.
// A policy.Validate failure comes back on "policy" alone and is narrowed
// to the key that caused it.
func validateSentinel(s SentinelConfig) error {
	err := s.Validate()
	var fe *configtype.FieldError
	if errors.As(err, &fe) && fe.Field == "policy" {
		return &Error{Key: policyKey(s.Policy), Msg: fe.Msg}
	}
	return section("sentinel", err)
}

// SentinelPaths is the data directory's layout of the Sentinel's files,
// the one place sentinel.Paths is filled.
func (p Paths) SentinelPaths() sentinel.Paths {
	return sentinel.Paths{
		State: p.SentinelState(), Feedback: p.Feedback(), Preferences: p.Preferences(),
		PendingDecisions: p.PendingDecisions(), TickLog: p.TickLog(), Routines: p.Routines(),
		Memory: p.Memory(), History: p.History(), Attention: p.Attention(), Behaviors: p.Behaviors(),
	}
}

// policyKey names the full dotted key of an invalid policy setting.
// policy.Validate reports by field name inside its own section; to name the
// key without a second copy of its rules, each set key is tried alone over
// the defaults, and the first that fails by itself is the culprit. A
// problem only a combination of keys makes stays "sentinel.policy".
func policyKey(p policy.Config) string {
	in := Config{Sentinel: SentinelConfig{Policy: p}}
	for _, k := range Keys() {
		rest, ok := strings.CutPrefix(k.Name, "sentinel.policy.")
		if !ok {
			continue
		}
		try := Config{Sentinel: SentinelConfig{Policy: policy.DefaultConfig()}}
		if reflect.DeepEqual(k.value(&try).Interface(), k.value(&in).Interface()) {
			continue
		}
		k.value(&try).Set(k.value(&in))
		if try.Sentinel.Policy.Validate() != nil {
			return "sentinel.policy." + rest
		}
	}
	return "sentinel.policy"
}
