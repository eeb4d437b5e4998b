package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
)

// View renders the screen: header, messages, events, prompts, input.
func (m *Model) View() tea.View {
	if m.quitting {
		return tea.NewView("")
	}
	var top, bottom strings.Builder
	dot := "○"
	if m.connected {
		dot = "●"
	}
	top.WriteString(truncate("raven tui · "+m.o.Conversation+" · "+dot+" "+m.status, m.width) + "\n")

	if len(m.events) > 0 {
		rule(&bottom, m.width, "─ events ")
		for _, e := range m.events[max(0, len(m.events)-eventsInView):] {
			bottom.WriteString(truncate(e, m.width) + "\n")
		}
	}
	if len(m.panel) > 0 {
		title := m.panelTitle
		if title == "" {
			title = "conversations"
		}
		rule(&bottom, m.width, "─ "+title+" ")
		for _, l := range m.panel {
			bottom.WriteString(wrap(l, m.width) + "\n")
		}
	}
	m.questionView(&bottom)
	if m.clarify != nil {
		m.clarifyView(&bottom)
	}
	rule(&bottom, m.width, "")
	if m.notice != "" {
		// A refusal is read whole: wrapped, never cut at the edge.
		bottom.WriteString(wrap(m.notice, m.width) + "\n")
	}
	bottom.WriteString("> " + string(m.input) + "█\n")
	bottom.WriteString(wrap("enter send · /question · /take · /release · /conversations · /approvals · /quit", m.width))

	used := strings.Count(top.String(), "\n") + strings.Count(bottom.String(), "\n") + 1
	room := max(m.height-used, 3)
	// Only the newest messages fit: wrap from the end until the room is
	// full, so a frame costs the screen, not the whole history (this runs
	// after every keystroke).
	msgs := make([]string, room)
	fill := room
	for i := len(m.messages) - 1; i >= 0 && fill > 0; i-- {
		l := m.messages[i]
		if i == m.partial-1 {
			l.text += "▍" // still being written
		}
		rows := strings.Split(renderLine(l, m.width), "\n")
		for j := len(rows) - 1; j >= 0 && fill > 0; j-- {
			fill--
			msgs[fill] = rows[j]
		}
	}
	v := tea.NewView(top.String() + strings.Join(msgs, "\n") + "\n" + bottom.String())
	v.AltScreen = true
	v.WindowTitle = "raven · " + m.o.Conversation
	return v
}

func renderLine(l line, width int) string {
	switch l.who {
	case "you":
		return wrap("you › "+l.text, width)
	case "raven⚑":
		return wrap(ProactiveMarker+l.text, width)
	case "tool":
		return wrap("  "+l.text, width)
	default:
		return wrap("raven › "+l.text, width)
	}
}

func rule(b *strings.Builder, width int, label string) {
	n := max(width-len([]rune(label)), 0)
	b.WriteString(label + strings.Repeat("─", n) + "\n")
}

func truncate(s string, width int) string {
	r := []rune(s)
	if width > 1 && len(r) > width {
		return string(r[:width-1]) + "…"
	}
	return s
}

// wrap breaks s at width runes, on spaces where possible. Runes, not
// display cells: wide characters may overflow a little, never corrupt.
func wrap(s string, width int) string {
	if width < 10 {
		return s
	}
	var out []string
	for _, para := range strings.Split(s, "\n") {
		r := []rune(para)
		for len(r) > width {
			cut := width
			for i := width; i > width/2; i-- {
				if r[i] == ' ' {
					cut = i
					break
				}
			}
			out = append(out, string(r[:cut]))
			r = r[cut:]
			if len(r) > 0 && r[0] == ' ' {
				r = r[1:]
			}
		}
		out = append(out, string(r))
	}
	return strings.Join(out, "\n")
}
