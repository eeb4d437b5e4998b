package questions

// FROZEN WIRE FORMAT. The input_requested and input_resolved payloads below
// are read by older strict clients that reject unknown fields. Never add,
// remove, rename or retype a field here. Clients that need more fetch the
// input_get snapshot when they see one of these events.

// Event kinds emitted through StoreOptions.Emit.
const (
	EventInputRequested = "input_requested"
	EventInputResolved  = "input_resolved"
)

// InputRequestedEvent is the frozen input_requested payload.
type InputRequestedEvent struct {
	Conversation string        `json:"conversation"`
	RequestID    string        `json:"request_id"`
	Incarnation  string        `json:"incarnation"`
	Revision     int64         `json:"revision"`
	Kind         string        `json:"kind"`
	Question     string        `json:"question"`
	Options      []EventOption `json:"options"`
}

// EventOption is one option in the frozen input_requested payload.
type EventOption struct {
	OptionID string `json:"option_id"`
	Label    string `json:"label"`
}

// InputResolvedEvent is the frozen input_resolved payload. Status is
// answered, cancelled or expired; RunID is set only for answered.
type InputResolvedEvent struct {
	Conversation string `json:"conversation"`
	RequestID    string `json:"request_id"`
	Incarnation  string `json:"incarnation"`
	Revision     int64  `json:"revision"`
	Status       string `json:"status"`
	Reason       string `json:"reason"`
	RunID        string `json:"run_id"`
}
