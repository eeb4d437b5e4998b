package eventlog

// Well-known event kinds, so producers and clients agree on spelling.
// Producers may log other kinds; keep them dotted lower-case.
const (
	KindTurnStarted        = "turn.started"
	KindTurnFinished       = "turn.finished"
	KindProactiveDelivered = "proactive.delivered"
	KindPolicyDenied       = "policy.denied"
	KindCronFired          = "cron.fired"
	KindClarifyRequested   = "clarify.requested"
	KindClarifyResolved    = "clarify.resolved"
	// KindInputRequested and KindInputResolved keep the seed's names; their
	// payloads are frozen (DESIGN.md §7).
	KindInputRequested  = "input_requested"
	KindInputResolved   = "input_resolved"
	KindControlTaken    = "control.taken"
	KindControlReleased = "control.released"
	KindGatewayStarted  = "gateway.started"
	KindGatewayStopping = "gateway.stopping"
	// KindUsagePaused is logged once per pause of ambient work by a
	// reached usage cap (payload: usage.Pause).
	KindUsagePaused = "usage.paused"
)
