package channels

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzVerify: the webhook verifier never panics, refuses with one of its
// typed errors, accepts only a header carrying the body's real MAC within
// the window, and always accepts what Sign produced.
func FuzzVerify(f *testing.F) {
	secret := []byte("whsec_fuzz")
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	body := []byte(`{"chat_id":"42","text":"remind me at 5"}`)
	f.Add(secret, Sign(secret, now, body), body, int64(0))
	f.Add(secret, Sign(secret, now.Add(-10*time.Minute), body), body, int64(0))
	f.Add(secret, strings.ToUpper(Sign(secret, now, body)), body, int64(30))
	f.Add(secret, "t="+strconv.FormatInt(now.Unix(), 10)+",v1=00", body, int64(0))
	f.Add(secret, "v1=abc,t=1", []byte{}, int64(0))
	f.Add([]byte{}, "t=1764579600,v1="+strings.Repeat("0", 64)+",v0=x", []byte("x"), int64(-5))
	f.Add(secret, " t = 1 , v1 = zz ", body, int64(0))
	f.Add(secret, "", body, int64(0))
	f.Fuzz(func(t *testing.T, secret []byte, header string, body []byte, skew int64) {
		at := now.Add(time.Duration(skew%3600) * time.Second)
		const window = 5 * time.Minute
		ts, sig, err := Verify(secret, header, body, at, window)
		if err != nil {
			if !errors.Is(err, ErrSignatureMissing) && !errors.Is(err, ErrSignatureInvalid) && !errors.Is(err, ErrSignatureExpired) {
				t.Fatalf("header %q: untyped refusal %v", header, err)
			}
		} else {
			// Accepted: the header's timestamp text and the body must carry
			// the MAC the verifier handed back for the replay cache.
			var tText string
			for _, part := range strings.Split(header, ",") {
				if k, v, _ := strings.Cut(strings.TrimSpace(part), "="); k == "t" {
					tText = v
				}
			}
			m := hmac.New(sha256.New, secret)
			m.Write([]byte(tText + "."))
			m.Write(body)
			if want := hex.EncodeToString(m.Sum(nil)); sig != want {
				t.Fatalf("header %q accepted with sig %q, the body's MAC is %q", header, sig, want)
			}
			if d := at.Sub(ts); d > window || d < -window {
				t.Fatalf("header %q accepted outside the window: ts %v, now %v", header, ts, at)
			}
		}
		// What Sign produces is always accepted at its own time.
		good := Sign(secret, at, body)
		if _, _, err := Verify(secret, good, body, at, window); err != nil {
			t.Fatalf("own signature %q refused: %v", good, err)
		}
		if len(body) > 0 {
			tampered := append([]byte{body[0] ^ 1}, body[1:]...)
			if _, _, err := Verify(secret, good, tampered, at, window); !errors.Is(err, ErrSignatureInvalid) {
				t.Fatalf("tampered body: %v, want ErrSignatureInvalid", err)
			}
		}
	})
}
