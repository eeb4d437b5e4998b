package channels

import (
	"strings"
	"unicode/utf8"
)

// TelegramLimit is the Bot API's message limit in UTF-16 code units.
const TelegramLimit = 4096

// utf16Len counts s in UTF-16 code units, the unit Telegram measures in.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += runeUnits(r)
	}
	return n
}

func runeUnits(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// SplitMessage cuts s into pieces of at most limit UTF-16 code units,
// preferring a paragraph break, then a line break, then a space, and only
// then a hard cut — which still never falls inside a rune. The separator at
// a soft break is dropped; text is otherwise kept as is.
func SplitMessage(s string, limit int) []string {
	if limit < 2 {
		limit = 2
	}
	var out []string
	for utf16Len(s) > limit {
		cut, units := 0, 0
		for i, r := range s {
			u := runeUnits(r)
			if units+u > limit {
				break
			}
			units += u
			_, size := utf8.DecodeRuneInString(s[i:])
			cut = i + size
		}
		window := s[:cut]
		piece, rest := window, s[cut:]
		// A soft break in the first quarter would leave a runt piece and
		// push the rest into yet another message; cut hard instead.
		floor := len(window) / 4
		if sep := leadingBreak(rest); sep != "" {
			// The limit fell exactly on a break.
			rest = rest[len(sep):]
		} else {
			for _, sep := range breaks {
				if b := strings.LastIndex(window, sep); b > 0 && b >= floor {
					piece, rest = window[:b], s[b+len(sep):]
					break
				}
			}
		}
		out = append(out, piece)
		s = rest
	}
	if s != "" || len(out) == 0 {
		out = append(out, s)
	}
	return out
}

// breaks are the soft break points, best first.
var breaks = []string{"\n\n", "\n", " "}

func leadingBreak(s string) string {
	for _, sep := range breaks {
		if strings.HasPrefix(s, sep) {
			return sep
		}
	}
	return ""
}

// markdownV2Special are the characters MarkdownV2 reserves outside code.
const markdownV2Special = "_*[]()~`>#+-=|{}.!\\"

// EscapeMarkdownV2 renders plain model output as Telegram MarkdownV2: every
// reserved character is escaped so the text arrives literally, except that
// fenced code blocks (```lang ... ```) and `inline code` stay code. An
// unterminated fence or backtick is escaped as ordinary text.
//
// Raven sends MarkdownV2 rather than plain text so code keeps its monospace
// formatting; everything else is literal, so a model that writes **bold**
// shows the asterisks rather than a parse error.
func EscapeMarkdownV2(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for len(s) > 0 {
		if strings.HasPrefix(s, "```") {
			if end := strings.Index(s[3:], "```"); end >= 0 {
				block := s[3 : 3+end]
				lang, code := "", block
				if nl := strings.IndexByte(block, '\n'); nl >= 0 && (nl == 0 || isLang(block[:nl])) {
					lang, code = block[:nl], block[nl+1:]
				}
				b.WriteString("```")
				b.WriteString(lang)
				b.WriteByte('\n')
				writeCode(&b, code)
				b.WriteString("```")
				s = s[3+end+3:]
				continue
			}
		} else if s[0] == '`' {
			if end := strings.IndexByte(s[1:], '`'); end > 0 {
				b.WriteByte('`')
				writeCode(&b, s[1:1+end])
				b.WriteByte('`')
				s = s[1+end+1:]
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s)
		if strings.ContainsRune(markdownV2Special, r) {
			b.WriteByte('\\')
		}
		b.WriteString(s[:size])
		s = s[size:]
	}
	return b.String()
}

// writeCode escapes the two characters MarkdownV2 reserves inside code.
func writeCode(b *strings.Builder, code string) {
	for _, r := range code {
		if r == '`' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
}

func isLang(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
