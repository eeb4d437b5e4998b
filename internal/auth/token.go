package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
)

// TokenPrefix marks Raven tokens so they are recognisable in config files
// and secret scanners.
const TokenPrefix = "rvn_"

// tokenBytes is the entropy of a token: 256 bits, so brute force is moot and
// no rate limiting is needed on verification.
const tokenBytes = 32

// maxTokenLen bounds what Verify will even hash.
const maxTokenLen = 128

func newToken() (string, []byte, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", nil, fmt.Errorf("auth: random token: %w", err)
	}
	tok := TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	return tok, hashToken(tok), nil
}

// hashToken is SHA-256 over the whole token string. A fast hash is right
// here: the token has 256 bits of entropy, so there is nothing to stretch.
func hashToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

func wellFormed(tok string) bool {
	if len(tok) > maxTokenLen || !strings.HasPrefix(tok, TokenPrefix) {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(tok[len(TokenPrefix):])
	return err == nil && len(b) == tokenBytes
}

func hashEqual(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }
