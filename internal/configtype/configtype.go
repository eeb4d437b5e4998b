// Package configtype holds the value types and checks the feature packages'
// config sections share, so each owns its section without importing config.
package configtype

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("30m", "1h").
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON writes the duration as a string, as the owner would type it.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// String is the duration without the zero units time.Duration.String keeps
// ("45m", "1h30m", "2h" rather than "45m0s", "1h30m0s", "2h0m0s").
func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// UnmarshalJSON reads a duration string; a number is refused, so "30" can
// never silently mean 30 nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"30m\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("bad duration %q: want e.g. \"90s\", \"30m\", \"1h\"", s)
	}
	*d = Duration(v)
	return nil
}

// FieldError is an invalid setting of one section. Field is the dotted key
// inside the section ("webhook.name"); the config package prefixes the
// section's own key to name the full dotted key.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Invalid returns a *FieldError.
func Invalid(field, format string, a ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// AbsoluteHTTP reports whether s is an absolute http(s) URL with a host.
func AbsoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// OneLine reports whether s has no control characters: a key, token or
// path with a stray newline breaks the header or open that uses it.
func OneLine(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// ChannelName accepts the names channel outlets register under: 1..32 of
// lowercase letters, digits, - and _.
func ChannelName(s string) bool {
	if len(s) < 1 || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
