package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// CallError turns the outcome of one failed HTTP model call into the error
// callers see. Every SDK-backed provider funnels through it so that the retry
// wrapper classifies failures identically whatever SDK produced them.
//
// ctx is the caller's context (not a per-attempt one): when it has ended the
// context error is returned, wrapped, so errors.Is(err, context.Canceled)
// holds. res is the last HTTP response the SDK saw (nil when none arrived);
// detail is the provider's own error text from the body, if it parsed one.
func CallError(ctx context.Context, provider, endpoint string, res *http.Response, err error, detail string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: call %s: %w", provider, endpoint, ctxErr)
	}
	e := &APIError{Provider: provider, URL: endpoint, Err: err}
	switch {
	case res == nil:
		e.Message = transportMessage(err)
	case res.StatusCode >= 400:
		e.StatusCode = res.StatusCode
		e.RetryAfter = res.Header.Get("Retry-After")
		e.Message = detail
		if e.Message == "" {
			e.Message = http.StatusText(res.StatusCode)
		}
	default:
		// A success status with an unusable body: retrying the same request
		// is unlikely to help, so it is reported with its real status.
		e.StatusCode = res.StatusCode
		e.Message = "malformed response body: " + oneLine(err)
	}
	return e
}

// transportMessage keeps the useful tail of a transport error ("connect:
// connection refused") and drops the SDK's request dump around it.
func transportMessage(err error) string {
	if err == nil {
		return "no response"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "no response before the request timeout"
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Err != nil {
		return oneLine(opErr.Err)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) && urlErr.Err != nil {
		return oneLine(urlErr.Err)
	}
	return oneLine(err)
}

func oneLine(err error) string {
	if err == nil {
		return "unknown error"
	}
	s := strings.Join(strings.Fields(err.Error()), " ")
	const max = 300
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}

// Endpoint joins a base URL and an API path for error messages, dropping any
// credentials embedded in the base URL.
func Endpoint(base, path string) string {
	if u, err := url.Parse(base); err == nil && u.User != nil {
		u.User = nil
		base = u.String()
	}
	return strings.TrimRight(base, "/") + "/" + strings.TrimLeft(path, "/")
}
