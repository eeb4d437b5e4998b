// Package tui is Raven's operator terminal UI: a Bubble Tea client of the
// gateway's control API (chat, clarify prompts, /question, live events).
package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
)

// ProactiveMarker marks a message Raven sent on its own (same text as the
// CLI outlet's).
const ProactiveMarker = "⚑ [raven, unprompted] "

// Limits that keep a long-running TUI's memory flat.
const (
	maxMessages  = 500
	maxEvents    = 200
	maxInput     = 8 << 10
	callTimeout  = 10 * time.Second
	minBackoff   = 250 * time.Millisecond
	maxBackoff   = 10 * time.Second
	eventsInView = 6
)

// Options configure the model.
type Options struct {
	Conversation string
	// Workspace, when set, is the absolute directory this operator session
	// works in: on every connect the conversation is created or re-bound
	// as an owner conversation there (conversations.open), so it can hold
	// questions.
	Workspace string
	Dial      Dialer
	// Clock drives the clarify countdown text.
	Clock clock.Clock
	// After schedules msg after d (default tea.Tick); tests record it and
	// send the message themselves.
	After func(d time.Duration, msg tea.Msg) tea.Cmd
}

// Model is the TUI state. Drive it with tea.NewProgram, or in tests by
// calling Update and reading View.
type Model struct {
	o Options

	client    Client
	connected bool
	status    string
	backoff   time.Duration
	// gen tags messages from one connection so stale ones from a dropped
	// connection are ignored after a reconnect.
	gen int

	messages []line
	// partial is 1 + the index in messages of the reply being streamed,
	// 0 when none is.
	partial int
	events  []string
	input   []rune
	// lastSeq is the newest event-log sequence shown; a reconnect resumes
	// the feed after it, so events of a gateway restart are not lost.
	lastSeq int64

	clarify  *clarifyState
	question *questions.Snapshot
	notice   string
	// panel is the last /conversations answer, shown until the next command.
	panel []string
	// panelTitle names the panel (default "conversations").
	panelTitle string

	width, height int
	quitting      bool
}

type line struct {
	who  string
	text string
}

// New returns a model for o.
func New(o Options) *Model {
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.After == nil {
		o.After = func(d time.Duration, msg tea.Msg) tea.Cmd {
			return tea.Tick(d, func(time.Time) tea.Msg { return msg })
		}
	}
	if o.Conversation == "" {
		o.Conversation = "tui:main"
	}
	return &Model{o: o, status: "connecting…", backoff: minBackoff, width: 80, height: 24}
}

// Messages that drive the model.
type (
	connectedMsg struct {
		gen    int
		client Client
	}
	connectFailedMsg struct{ err error }
	// ReconnectMsg asks for a new connection attempt (sent by the backoff timer).
	ReconnectMsg    struct{}
	notificationMsg struct {
		gen int
		n   Notification
	}
	disconnectedMsg struct{ gen int }
	// rpcDoneMsg is one finished call; handle gives its typed reply to the
	// code that made the call, on the UI goroutine.
	rpcDoneMsg struct {
		what   string
		handle func(m *Model) tea.Cmd
	}
	// TickMsg repaints the clarify countdown.
	TickMsg struct{}
)

// Init starts the first connection.
func (m *Model) Init() tea.Cmd { return m.connect() }

func (m *Model) connect() tea.Cmd {
	m.gen++
	gen, dial := m.gen, m.o.Dial
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		c, err := dial(ctx)
		if err != nil {
			return connectFailedMsg{err}
		}
		return connectedMsg{gen: gen, client: c}
	}
}

func listen(gen int, c Client) tea.Cmd {
	return func() tea.Msg {
		n, ok := <-c.Notifications()
		if !ok {
			return disconnectedMsg{gen}
		}
		return notificationMsg{gen, n}
	}
}

// reply is one finished call: what it was for, the tag naming what on
// screen it answers, and its typed result.
type reply[Resp any] struct {
	what, tag string
	resp      Resp
	err       error
}

// rpc runs meth off the UI goroutine; done gets its reply.
func rpc[Req, Resp any](m *Model, what string, meth api.Method[Req, Resp], req Req, done func(*Model, reply[Resp]) tea.Cmd) tea.Cmd {
	return rpcTagged(m, what, "", meth, req, done)
}

// rpcTagged is rpc with a tag naming what the reply belongs to.
func rpcTagged[Req, Resp any](m *Model, what, tag string, meth api.Method[Req, Resp], req Req, done func(*Model, reply[Resp]) tea.Cmd) tea.Cmd {
	c := m.client
	if c == nil {
		m.notice = "not connected: " + what + " not sent"
		return nil
	}
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		resp, err := invoke(ctx, c, meth, req)
		r := reply[Resp]{what: what, tag: tag, resp: resp, err: err}
		return rpcDoneMsg{what: what, handle: func(m *Model) tea.Cmd { return done(m, r) }}
	}
}

func (m *Model) tick() tea.Cmd { return m.o.After(time.Second, TickMsg{}) }

// Update handles one message.
func (m *Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.PasteMsg:
		m.insert(msg.Content)
	case connectedMsg:
		if msg.gen != m.gen {
			_ = msg.client.Close()
			return m, nil
		}
		m.client, m.connected, m.backoff = msg.client, true, minBackoff
		m.status = "connected"
		// After a gateway restart the displayed owner question may be
		// stale, so it is fetched again rather than trusted.
		fetch := m.refreshQuestion()
		if m.o.Workspace != "" {
			// The question is read once the binding is settled.
			fetch = rpc(m, "open", api.ConversationsOpen, questions.OpenParams{Conversation: m.o.Conversation, Workspace: m.o.Workspace}, (*Model).openDone)
		}
		return m, tea.Batch(
			listen(m.gen, msg.client),
			rpc(m, "attach", api.ChatAttach, api.ChatAttachParams{Conversation: m.o.Conversation}, (*Model).attachDone),
			m.subscribe(),
			fetch,
			m.pendingApprovals(),
		)
	case connectFailedMsg:
		return m, m.lost(msg.err.Error())
	case disconnectedMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		return m, m.lost("connection closed")
	case ReconnectMsg:
		m.status = "connecting…"
		return m, m.connect()
	case notificationMsg:
		if msg.gen != m.gen {
			return m, nil
		}
		return m, tea.Batch(m.notification(msg.n), listen(m.gen, m.client))
	case rpcDoneMsg:
		return m, msg.handle(m)
	case TickMsg:
		if m.clarify != nil {
			return m, m.tick()
		}
	}
	return m, nil
}

// lost drops the connection and schedules a reconnect with backoff.
func (m *Model) lost(why string) tea.Cmd {
	if m.client != nil {
		_ = m.client.Close()
	}
	m.gen++ // ignore whatever the dead connection still delivers
	m.client, m.connected = nil, false
	d := m.backoff
	m.backoff = min(m.backoff*2, maxBackoff)
	// The retry comes first: a long dial error is cut at the screen edge.
	m.status = fmt.Sprintf("disconnected; retrying in %s (%s)", d, why)
	return m.o.After(d, ReconnectMsg{})
}

// subscribe starts the event feed, after the last event shown if any.
func (m *Model) subscribe() tea.Cmd {
	var p api.SubscribeParams
	if m.lastSeq > 0 {
		after := m.lastSeq
		p.AfterSeq = &after
	}
	return rpc(m, "subscribe", api.EventsSubscribe, p, (*Model).subscribeDone)
}

func (m *Model) notification(n Notification) tea.Cmd {
	switch n.Method {
	case api.NotifyChatMessage.Name():
		cm, _, err := controlapi.DecodeNotification(n, api.NotifyChatMessage)
		if err != nil {
			m.addEvent("bad notification: " + err.Error())
			return nil
		}
		if cm.Conversation != "" && cm.Conversation != m.o.Conversation {
			return nil
		}
		who := "raven"
		if cm.Proactive {
			who = "raven⚑"
		}
		if cm.Reply && !cm.Proactive && m.partial > 0 {
			m.messages[m.partial-1] = line{who: who, text: cm.Content}
			m.partial = 0
			return nil
		}
		m.addMessage(who, cm.Content)
	case api.NotifyChatDelta.Name():
		cd, _, err := controlapi.DecodeNotification(n, api.NotifyChatDelta)
		if err != nil {
			m.addEvent("bad notification: " + err.Error())
			return nil
		}
		if cd.Conversation != "" && cd.Conversation != m.o.Conversation {
			return nil
		}
		m.delta(cd)
	case api.NotifyClarifyRequest.Name():
		cr, _, err := controlapi.DecodeNotification(n, api.NotifyClarifyRequest)
		if err != nil {
			m.addEvent("bad notification: " + err.Error())
			return nil
		}
		m.clarify = newClarify(cr, m.o.Clock.Now())
		return m.tick()
	case api.NotifyEventsDropped.Name():
		// The gateway dropped this feed (we read too slowly); pick it up
		// again where it stopped rather than silently going quiet.
		d, _, _ := controlapi.DecodeNotification(n, api.NotifyEventsDropped)
		m.addEvent("event feed dropped (" + d.Reason + "); resubscribing")
		m.lastSeq = max(m.lastSeq, d.LastSeq)
		return m.subscribe()
	case api.NotifyClosing.Name():
		c, _, _ := controlapi.DecodeNotification(n, api.NotifyClosing)
		m.addEvent("gateway closed the connection: " + c.Reason)
		// ask_user questions live in the gateway's memory and their turns
		// are cancelled at shutdown: a prompt kept on screen could only
		// be refused later while it swallowed the owner's Enter.
		if c.Reason == "shutdown" && m.clarify != nil {
			m.clarify = nil
			m.notice = "the gateway is shutting down: the open question was cancelled"
		}
	default:
		summary, kind, seq := summarizeEvent(n)
		m.addEvent(summary)
		m.lastSeq = max(m.lastSeq, seq)
		// Lifecycle events of owner questions mean the snapshot changed;
		// the events themselves are never taken as the answer state.
		if kind == "input_requested" || kind == "input_resolved" {
			return m.refreshQuestion()
		}
		if kind == EventApprovalRequested {
			m.approvalEvent(n, kind)
		}
	}
	return nil
}

func (m *Model) addMessage(who, text string) {
	m.messages = append(m.messages, line{who: who, text: text})
	if over := len(m.messages) - maxMessages; over > 0 {
		m.messages = m.messages[over:]
		m.partial = max(m.partial-over, 0)
	}
}

// delta grows the reply being streamed; a tool call ends it as written
// (it was the model's preamble) and the reply starts again after it.
func (m *Model) delta(cd api.ChatDelta) {
	if cd.Tool != nil {
		m.partial = 0
		m.addMessage("tool", toolLine(cd.Tool))
		return
	}
	if m.partial == 0 {
		m.addMessage("raven", "")
		m.partial = len(m.messages)
	}
	m.messages[m.partial-1].text += cd.Text
}

// toolLine is how a tool call shows in the message list (as in the chat
// REPL): "· web_fetch {…}", its arguments cut to one line.
func toolLine(t *api.ToolNote) string {
	args := strings.Join(strings.Fields(t.Arguments), " ")
	if r := []rune(args); len(r) > 100 {
		args = string(r[:100]) + "…"
	}
	if args == "" || args == "{}" {
		return "· " + t.Name
	}
	return "· " + t.Name + " " + args
}

func (m *Model) addEvent(s string) {
	m.events = append(m.events, s)
	if len(m.events) > maxEvents {
		m.events = m.events[len(m.events)-maxEvents:]
	}
}

// summarizeEvent renders one event-feed notification on one line.
func summarizeEvent(n Notification) (summary, kind string, seq int64) {
	var ev map[string]any
	if json.Unmarshal(n.Params, &ev) != nil {
		return n.Method, "", 0
	}
	for _, k := range []string{"kind", "type", "event"} {
		if s, ok := ev[k].(string); ok {
			kind = s
			break
		}
	}
	parts := []string{}
	if s, ok := ev["seq"].(float64); ok && n.Method == api.NotifyEvent.Name() {
		seq = int64(s)
		parts = append(parts, fmt.Sprintf("#%d", seq))
	}
	if kind != "" {
		parts = append(parts, kind)
	} else {
		parts = append(parts, n.Method)
	}
	if c, ok := ev["conversation"].(string); ok {
		parts = append(parts, c)
	}
	// The payload's few fields an operator scans for: who started a turn
	// when it was not the owner, and why something failed.
	if p, ok := ev["payload"].(map[string]any); ok {
		if o, ok := p["origin"].(string); ok && o != "" && o != "user" {
			parts = append(parts, "origin="+o)
		}
		if p["proactive"] == true {
			parts = append(parts, "⚑")
		}
		if e, ok := p["error"].(string); ok && e != "" {
			parts = append(parts, "error: "+e)
		}
	}
	if ts, ok := ev["time"].(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
			parts = append([]string{t.Local().Format("15:04:05")}, parts...)
		}
	}
	return strings.Join(parts, " "), kind, seq
}

func (m *Model) insert(s string) {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	for _, r := range s {
		if len(m.input) >= maxInput {
			return
		}
		if r == '\n' || r == '\t' {
			r = ' '
		}
		if r >= ' ' {
			m.input = append(m.input, r)
		}
	}
}

func (m *Model) key(k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "ctrl+c", "ctrl+d":
		return m.quit()
	case "enter":
		text := strings.TrimSpace(string(m.input))
		m.input = m.input[:0]
		return m.submit(text)
	case "backspace":
		if len(m.input) > 0 {
			m.input = m.input[:len(m.input)-1]
		}
	case "ctrl+u":
		m.input = m.input[:0]
	case "up":
		if m.clarify != nil {
			m.clarify.move(-1)
		}
	case "down", "tab":
		if m.clarify != nil {
			m.clarify.move(1)
		}
	case "esc":
		m.notice = ""
	default:
		if k.Text != "" && k.Mod&^tea.ModShift == 0 {
			m.insert(k.Text)
		}
	}
	return nil
}

func (m *Model) quit() tea.Cmd {
	m.quitting = true
	if m.client != nil {
		_ = m.client.Close()
		m.client, m.connected = nil, false
	}
	m.gen++
	return tea.Quit
}

// submit handles Enter: the clarify prompt takes it first, then commands,
// then ordinary chat.
func (m *Model) submit(text string) tea.Cmd {
	m.notice = ""
	if m.clarify != nil && !strings.HasPrefix(text, "/") {
		return m.respondClarify(text)
	}
	if text == "" {
		return nil
	}
	switch {
	case text == "/quit" || text == "/exit":
		return m.quit()
	case text == "/take" || text == "/release" || text == "/conversations":
		m.panel, m.panelTitle = nil, ""
		return m.conversationCommand(text)
	case isApprovalCommand(text):
		return m.approvalCommand(text)
	case text == "/question" || strings.HasPrefix(text, "/question "):
		return m.questionCommand(strings.TrimSpace(strings.TrimPrefix(text, "/question")))
	}
	if !utf8.ValidString(text) {
		m.notice = "input is not valid UTF-8"
		return nil
	}
	m.addMessage("you", text)
	return rpc(m, "send", api.ChatSend, api.ChatSendParams{Conversation: m.o.Conversation, Text: text}, (*Model).sendDone)
}

// attachDone reports a refused chat.attach; an older gateway without it
// still works for chat.
func (m *Model) attachDone(r reply[api.ChatAttachResult]) tea.Cmd {
	if r.err != nil {
		m.addEvent(r.what + " unavailable: " + r.err.Error())
	}
	return nil
}

func (m *Model) subscribeDone(r reply[api.SubscribeResult]) tea.Cmd {
	if r.err != nil {
		m.addEvent(r.what + " unavailable: " + r.err.Error())
		return nil
	}
	if r.resp.Missed {
		m.addEvent(fmt.Sprintf("events before #%d were pruned before they could be shown", r.resp.OldestRetained))
	}
	return nil
}

func (m *Model) sendDone(r reply[api.ChatSendResult]) tea.Cmd {
	if r.err != nil {
		m.notice = "message not sent: " + r.err.Error()
	}
	return nil
}
