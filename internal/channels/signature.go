package channels

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>" where the
// MAC covers "<t>.<body>": binding the timestamp into the MAC is what makes
// the replay window enforceable.
const SignatureHeader = "X-Raven-Signature"

// Signature verification failures. All are refusals of bad input.
var (
	ErrSignatureMissing = errors.New("webhook: signature header missing or malformed")
	ErrSignatureInvalid = errors.New("webhook: signature does not match")
	ErrSignatureExpired = errors.New("webhook: signature timestamp outside the window")
	ErrReplayed         = errors.New("webhook: request already seen")
)

// Sign returns the SignatureHeader value for body sent at ts.
func Sign(secret []byte, ts time.Time, body []byte) string {
	t := strconv.FormatInt(ts.Unix(), 10)
	return "t=" + t + ",v1=" + hex.EncodeToString(mac(secret, t, body))
}

func mac(secret []byte, t string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(t))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks header against body at now, accepting timestamps within
// window either side of now. It returns the MAC (hex) for the replay cache.
func Verify(secret []byte, header string, body []byte, now time.Time, window time.Duration) (ts time.Time, sig string, err error) {
	var t, v1 string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return ts, "", ErrSignatureMissing
		}
		switch k {
		case "t":
			t = v
		case "v1":
			v1 = v
		}
	}
	unix, perr := strconv.ParseInt(t, 10, 64)
	got, herr := hex.DecodeString(v1)
	if t == "" || v1 == "" || perr != nil || herr != nil || len(got) != sha256.Size {
		return ts, "", ErrSignatureMissing
	}
	// MAC first: an attacker without the secret learns nothing about the
	// window from the error they get back.
	if !hmac.Equal(got, mac(secret, t, body)) {
		return ts, "", ErrSignatureInvalid
	}
	ts = time.Unix(unix, 0)
	if d := now.Sub(ts); d > window || d < -window {
		return ts, "", ErrSignatureExpired
	}
	return ts, strings.ToLower(v1), nil
}
