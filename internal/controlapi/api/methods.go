package api

import (
	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/questions"
)

// Built-in methods every control-API server has.
const (
	// Hello authenticates a connection; the first call on it.
	Hello Method[HelloParams, HelloResult] = "auth.hello"
	Ping  Method[Empty, PingResult]        = "ping"
	// Whoami is the principal the connection's token stands for.
	Whoami        Method[Empty, auth.Principal] = "auth.whoami"
	GatewayStatus Method[Empty, StatusResult]   = "gateway.status"
	// EventsTail pages through the event log after a sequence number.
	EventsTail Method[TailParams, TailResult] = "events.tail"
	// EventsSubscribe starts NotifyEvent on the connection.
	EventsSubscribe   Method[SubscribeParams, SubscribeResult] = "events.subscribe"
	EventsUnsubscribe Method[Empty, UnsubscribeResult]         = "events.unsubscribe"
	// ControlTake takes the Take Control lease of a conversation.
	ControlTake    Method[ControlParams, auth.Lease]       = "control.take"
	ControlRelease Method[ControlParams, ReleaseResult]    = "control.release"
	ControlGet     Method[ControlParams, ControllerResult] = "control.get"
)

// The gateway's methods.
const (
	// ChatSend hands one owner message to the conversation's turn.
	ChatSend Method[ChatSendParams, ChatSendResult] = "chat.send"
	// ChatAttach routes the conversation's messages and clarify prompts to
	// this connection (NotifyChatMessage, NotifyClarifyRequest).
	ChatAttach Method[ChatAttachParams, ChatAttachResult] = "chat.attach"
	// ClarifyRespond answers a pending ask_user question.
	ClarifyRespond Method[questions.ClarifyRespondParams, questions.ClarifyRespondResult] = "clarify.respond"
	// InputGet, InputAnswer and InputCancel serve the durable owner questions.
	InputGet    Method[questions.GetParams, questions.Snapshot]   = "input_get"
	InputAnswer Method[questions.AnswerParams, questions.Receipt] = "input_answer"
	InputCancel Method[questions.CancelParams, questions.Receipt] = "input_cancel"
)

// Notifications the server sends.
const (
	// NotifyEvent carries one event to an events.subscribe caller.
	NotifyEvent Notification[eventlog.Event] = "events.event"
	// NotifyEventsDropped ends a subscription; resubscribe with after_seq =
	// last_seq. Reasons: slow_subscriber, unauthorized, closed.
	NotifyEventsDropped Notification[DroppedParams] = "events.dropped"
	// NotifyClosing is the last notification a dropped connection gets.
	NotifyClosing Notification[ClosingParams] = "connection.closing"
	// NotifyChatMessage carries a message to an attached connection.
	NotifyChatMessage Notification[ChatMessage] = "chat.message"
	// NotifyChatDelta carries part of a reply being written to an attached
	// connection; the whole reply follows as a chat.message with reply set.
	NotifyChatDelta Notification[ChatDelta] = "chat.delta"
	// NotifyClarifyRequest carries an ask_user question to an attached TUI.
	NotifyClarifyRequest Notification[questions.ClarifyRequest] = "clarify.request"
)

// The owner-conversation lifecycle (seed 000; DESIGN §7).
const (
	ConversationsList Method[Empty, questions.ListResult]                              = "conversations.list"
	ConversationsShow Method[questions.ConversationParams, questions.ConversationView] = "conversations.show"
	// ConversationsOpen creates or re-binds the calling operator session's
	// owner conversation for its workspace.
	ConversationsOpen    Method[questions.OpenParams, questions.OpenResult]               = "conversations.open"
	ConversationsNew     Method[questions.NewParams, questions.ConversationView]          = "conversations.new"
	ConversationsReset   Method[questions.ConversationParams, questions.ConversationView] = "conversations.reset"
	ConversationsTake    Method[questions.TakeParams, questions.TakeResult]               = "conversations.take"
	ConversationsRelease Method[questions.ConversationParams, questions.ReleaseResult]    = "conversations.release"
	// ConversationsNative claims (or releases) the native seat: the local
	// REPL of `raven chat --native CONV`.
	ConversationsNative Method[questions.NativeParams, questions.NativeResult] = "conversations.native"
)

// QuestionErrorData is the data of a JSON-RPC error from the questions and
// conversations methods: the questions package's precise code and reason,
// which the JSON-RPC code is coarser than (expired and conflict share one).
type QuestionErrorData struct {
	Code   string `json:"questions_code"`
	Reason string `json:"reason,omitempty"`
}
