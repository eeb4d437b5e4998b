package llm

import "context"

// Origins of model calls that are not agent turns (turns use their
// spine.Origin: user, sentinel, cron, heartbeat, subagent, answer).
const (
	OriginDiscovery = "discovery" // the Sentinel's daily task discovery
	OriginExtractor = "extractor" // the behaviours extractor
	OriginRouter    = "router"    // the classifier of the owner's reply to a pending decision
	OriginAnalysis  = "analysis"  // the Sentinel's daily analysis
)

// CallTag says on whose behalf a model call is made. Usage accounting
// reads it from the call's context; the call site sets it, since only it
// knows.
type CallTag struct {
	Origin       string
	Conversation string
	// Tick marks the one decision call of a Sentinel or heartbeat tick,
	// whose tick may end delivering nothing (a silent tick).
	Tick bool
}

type callTagKey struct{}

// WithCallTag returns ctx carrying t.
func WithCallTag(ctx context.Context, t CallTag) context.Context {
	return context.WithValue(ctx, callTagKey{}, t)
}

// CallTagFrom returns the tag ctx carries; ok is false when none was set.
func CallTagFrom(ctx context.Context) (t CallTag, ok bool) {
	t, ok = ctx.Value(callTagKey{}).(CallTag)
	return t, ok
}
