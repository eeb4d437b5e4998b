// Package llmtest serves recorded model API responses from a local HTTP
// server so provider tests exercise the real SDK wire path without a network.
package llmtest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
)

// Step is one scripted HTTP exchange, served in order.
type Step struct {
	Status int               // default 200
	Header map[string]string // Content-Type defaults to application/json
	File   string            // body read from this file (e.g. testdata/x.json)
	Body   string            // body used when File is empty
	// Block holds the request open until the client goes away, signalling
	// Arrived first, so tests can cancel a call that is in flight.
	Block bool
}

// Recorded is a request the server received.
type Recorded struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Replay is a running replay server.
type Replay struct {
	URL string

	t       testing.TB
	srv     *httptest.Server
	arrived chan struct{}

	mu    sync.Mutex
	steps []Step
	reqs  []Recorded
}

// NewReplay starts a server that answers requests with steps in order and
// fails the test on any request beyond them. It closes with the test.
func NewReplay(t testing.TB, steps ...Step) *Replay {
	t.Helper()
	r := &Replay{t: t, steps: steps, arrived: make(chan struct{}, len(steps))}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	r.URL = r.srv.URL
	t.Cleanup(r.srv.Close)
	return r
}

func (r *Replay) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, Recorded{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: body})
	if len(r.steps) == 0 {
		r.mu.Unlock()
		r.t.Errorf("llmtest: unexpected request %d: %s %s", len(r.reqs), req.Method, req.URL.Path)
		http.Error(w, "no replay step left", http.StatusTeapot)
		return
	}
	step := r.steps[0]
	r.steps = r.steps[1:]
	r.mu.Unlock()

	if step.Block {
		r.arrived <- struct{}{}
		<-req.Context().Done()
		return
	}
	data := []byte(step.Body)
	if step.File != "" {
		var err error
		if data, err = os.ReadFile(step.File); err != nil {
			r.t.Errorf("llmtest: %v", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range step.Header {
		w.Header().Set(k, v)
	}
	status := step.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// Arrived receives once per Block step, when its request is being held.
func (r *Replay) Arrived() <-chan struct{} { return r.arrived }

// Requests returns the requests received so far.
func (r *Replay) Requests() []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Recorded(nil), r.reqs...)
}

// Pending reports how many steps were not served.
func (r *Replay) Pending() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.steps)
}

// RefusedURL returns a loopback URL on which nothing listens, so a dial to it
// is refused at once.
func RefusedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}
