package llm_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
)

func TestCallError(t *testing.T) {
	const ep = "http://127.0.0.1:1/v1/chat/completions"
	refused := &url.Error{Op: "Post", URL: ep, Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}
	hdr := http.Header{"Retry-After": []string{"5"}}
	tests := []struct {
		name       string
		res        *http.Response
		err        error
		detail     string
		wantStatus int
		wantMsg    string
		retryable  bool
	}{
		{"refused", nil, refused, "", 0, "connect: connection refused", true},
		{"attempt timeout", nil, fmt.Errorf("x: %w", context.DeadlineExceeded), "", 0, "no response before the request timeout", true},
		{"429", &http.Response{StatusCode: 429, Header: hdr}, errors.New("sdk"), "Rate limit reached", 429, "Rate limit reached", true},
		{"500 without detail", &http.Response{StatusCode: 500, Header: http.Header{}}, errors.New("sdk"), "", 500, "Internal Server Error", true},
		{"400", &http.Response{StatusCode: 400, Header: http.Header{}}, errors.New("sdk"), "bad tools", 400, "bad tools", false},
		{"malformed 200", &http.Response{StatusCode: 200, Header: http.Header{}}, errors.New("unexpected end of JSON input"), "", 200, "malformed response body: unexpected end of JSON input", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := llm.CallError(context.Background(), "openai", ep, tt.res, tt.err, tt.detail)
			var ae *llm.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err = %v, want *APIError", err)
			}
			if ae.StatusCode != tt.wantStatus || ae.Message != tt.wantMsg || ae.Retryable() != tt.retryable || ae.URL != ep {
				t.Errorf("got %+v (retryable %v)", ae, ae.Retryable())
			}
			if !strings.Contains(err.Error(), ep) {
				t.Errorf("message %q does not name the URL", err)
			}
		})
	}
	if got := llm.CallError(context.Background(), "openai", ep, &http.Response{StatusCode: 429, Header: hdr}, nil, "").(*llm.APIError).RetryAfter; got != "5" {
		t.Errorf("RetryAfter = %q", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := llm.CallError(ctx, "openai", ep, nil, refused, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err = %v", err)
	}
}

func TestEndpointDropsCredentials(t *testing.T) {
	if got := llm.Endpoint("https://user:secret@example.test/v1/", "/chat/completions"); got != "https://example.test/v1/chat/completions" {
		t.Errorf("Endpoint = %q", got)
	}
}
