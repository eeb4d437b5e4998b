package predictor

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// minTokenLen drops short words: at two bytes almost every English token is
// a function word, and a routine named "ok" helps nobody.
const minTokenLen = 3

// stopWords are words too common in chat to name an activity. They include
// the chat filler and relative time words an owner uses with every request,
// which would otherwise look like "daily routines" of a busy chatter.
var stopWords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range []string{
		"the", "and", "for", "are", "but", "not", "you", "your", "yours", "all", "any", "can", "had", "her", "was",
		"one", "our", "out", "has", "have", "him", "his", "how", "its", "let", "may", "who", "did", "get", "got",
		"she", "too", "use", "way", "yes", "yet", "why", "what", "when", "where", "which", "while", "with", "would",
		"could", "should", "will", "shall", "this", "that", "these", "those", "there", "their", "them", "they", "then",
		"than", "from", "into", "onto", "over", "under", "about", "above", "after", "again", "against", "before",
		"below", "between", "both", "down", "during", "each", "few", "further", "here", "more", "most", "other",
		"some", "such", "only", "own", "same", "very", "just", "also", "been", "being", "does", "doing", "done",
		"cannot", "off", "once", "because", "until", "through", "were",
		"please", "thanks", "thank", "thx", "hey", "hello", "okay", "sure", "yeah", "yep", "nope", "hmm", "lol",
		"raven", "need", "needs", "want", "wants", "like", "know", "think", "make", "made", "going", "gonna",
		"today", "tomorrow", "yesterday", "tonight", "now", "later", "soon", "time", "day", "days", "week", "weeks",
		"morning", "evening", "afternoon", "night", "monday", "tuesday", "wednesday", "thursday", "friday",
		"saturday", "sunday", "mon", "tue", "wed", "thu", "fri", "sat", "sun", "again", "still", "really",
		"something", "anything", "everything", "nothing", "thing", "things", "tell", "remind", "reminder", "check",
		"see", "look", "give", "take", "put", "say", "said", "back", "good", "great", "new", "old", "much", "many",
		"well", "right", "every", "next", "last", "first", "bit", "lot", "ago", "via", "per",
	} {
		m[w] = struct{}{}
	}
	return m
}()

// tokenizer splits text into lower-cased salient words, interning each
// distinct word once so a long history costs one allocation per vocabulary
// word, not per occurrence.
type tokenizer struct {
	ids   map[string]int32
	names []string
	buf   []byte
}

// stopID marks a stop word in ids, so each token costs one map lookup.
const stopID = -1

func newTokenizer() *tokenizer {
	ids := make(map[string]int32, len(stopWords)+512)
	for w := range stopWords {
		ids[w] = stopID
	}
	return &tokenizer{ids: ids, buf: make([]byte, 0, 64)}
}

// each calls fn with the id of every salient word of s, in order, with
// repeats.
func (t *tokenizer) each(s string, fn func(id int32)) {
	t.buf = t.buf[:0]
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
				t.buf = append(t.buf, c)
			case c >= 'A' && c <= 'Z':
				t.buf = append(t.buf, c+'a'-'A')
			case c == '\'' && len(t.buf) > 0 && i+1 < len(s) && isASCIILetter(s[i+1]):
				t.buf = append(t.buf, c) // keep contractions whole: they are dropped below
			default:
				t.flush(fn)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			t.buf = utf8.AppendRune(t.buf, unicode.ToLower(r))
		} else {
			t.flush(fn)
		}
		i += n
	}
	t.flush(fn)
}

func (t *tokenizer) flush(fn func(id int32)) {
	w := t.buf
	t.buf = t.buf[:0]
	// Contractions ("don't", "it's") are function words, never a subject.
	if len(w) < minTokenLen || allDigits(w) || bytes.IndexByte(w, '\'') >= 0 {
		return
	}
	id, ok := t.ids[string(w)]
	if id == stopID {
		return
	}
	if !ok {
		id = int32(len(t.names))
		name := string(w)
		t.ids[name] = id
		t.names = append(t.names, name)
	}
	fn(id)
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func allDigits(w []byte) bool {
	for _, c := range w {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
