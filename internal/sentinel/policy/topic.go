package policy

// Topic tags and content hashes are computed without allocating so Check
// stays allocation-free on the allow path.

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	maxTopic  = 64
	topicKeys = 3
)

func hashString(s string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func hashBytes(b []byte) uint64 {
	h := uint64(fnvOffset)
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

func lowerASCII(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// contentHash identifies content for de-duplication: case, punctuation and
// spacing differences do not make a message new.
func contentHash(s string) uint64 {
	h := uint64(fnvOffset)
	space := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isWordByte(c) {
			space = true
			continue
		}
		if space && h != fnvOffset {
			h ^= ' '
			h *= fnvPrime
		}
		space = false
		h ^= uint64(lowerASCII(c))
		h *= fnvPrime
	}
	return h
}

var stopwords = map[string]struct{}{
	"the": {}, "and": {}, "for": {}, "you": {}, "your": {}, "are": {}, "was": {}, "with": {}, "that": {},
	"this": {}, "have": {}, "has": {}, "had": {}, "not": {}, "but": {}, "dont": {}, "didnt": {}, "can": {}, "cant": {}, "wont": {},
	"will": {}, "just": {}, "about": {}, "from": {}, "into": {}, "they": {}, "them": {}, "what": {},
	"when": {}, "where": {}, "which": {}, "who": {}, "how": {}, "why": {}, "all": {}, "any": {}, "out": {},
	"our": {}, "its": {}, "isnt": {}, "doesnt": {}, "arent": {}, "there": {}, "their": {}, "then": {}, "than": {}, "some": {},
	"remind": {}, "reminder": {}, "reminding": {}, "forget": {}, "remember": {}, "please": {}, "hey": {},
	"today": {}, "tomorrow": {}, "tonight": {}, "now": {}, "soon": {}, "later": {}, "still": {}, "want": {},
	"need": {}, "should": {}, "would": {}, "could": {}, "maybe": {}, "also": {}, "quick": {}, "time": {},
	"yet": {}, "let": {}, "get": {}, "got": {}, "youre": {}, "ive": {}, "off": {}, "via": {}, "per": {},
	// Units of a relative time ("in 5 minutes") say when, not what.
	"sec": {}, "secs": {}, "second": {}, "seconds": {}, "min": {}, "mins": {}, "minute": {}, "minutes": {},
	"hour": {}, "hours": {}, "hrs": {}, "day": {}, "days": {}, "week": {}, "weeks": {},
}

// joiner reports whether content[i] joins the word around it: an
// apostrophe, or a hyphen followed by a word byte.
func joiner(content string, i int) bool {
	switch content[i] {
	case '\'':
		return true
	case '-':
		return i+1 < len(content) && isWordByte(content[i+1])
	}
	return false
}

// appendTopic appends the topic tag of content to dst: up to three
// keywords (lower case, stopwords and short words dropped) in sorted order
// joined by '-', so rephrasings of the same reminder share a tag.
func appendTopic(dst []byte, content string) []byte {
	var lower [topicKeys][24]byte
	var lens [topicKeys]int
	n := 0
	for i := 0; i < len(content) && n < topicKeys; {
		for i < len(content) && !isWordByte(content[i]) {
			i++
		}
		start := i
		// An apostrophe or an inner hyphen joins: "stand-up" and "standup",
		// "don't" and "dont" are one keyword.
		for i < len(content) && (isWordByte(content[i]) || joiner(content, i)) {
			i++
		}
		w := content[start:i]
		if len(w) < 3 || len(w) > 24 {
			continue
		}
		k := 0
		for j := 0; j < len(w); j++ {
			if w[j] != '\'' && w[j] != '-' {
				lower[n][k] = lowerASCII(w[j])
				k++
			}
		}
		l := lower[n][:k]
		if _, stop := stopwords[string(l)]; stop {
			continue
		}
		digits := true
		for _, c := range l {
			if c < '0' || c > '9' {
				digits = false
				break
			}
		}
		if digits {
			continue
		}
		lens[n] = k
		n++
	}
	// Insertion sort of at most three keywords.
	var order [topicKeys]int
	for i := 0; i < n; i++ {
		order[i] = i
		for j := i; j > 0 && string(lower[order[j]][:lens[order[j]]]) < string(lower[order[j-1]][:lens[order[j-1]]]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	for i := 0; i < n; i++ {
		if i > 0 {
			dst = append(dst, '-')
		}
		dst = append(dst, lower[order[i]][:lens[order[i]]]...)
	}
	if n == 0 {
		dst = append(dst, "general"...)
	}
	return dst
}

// DeriveTopic returns the stable topic tag used when a request names none.
func DeriveTopic(content string) string {
	var buf [maxTopic]byte
	return string(appendTopic(buf[:0], content))
}

// topicHash is the hash of the request's topic tag, derived when empty.
func topicHash(topic, content string) uint64 {
	if topic != "" {
		return hashString(topic)
	}
	var buf [maxTopic + 8]byte
	return hashBytes(appendTopic(buf[:0], content))
}
