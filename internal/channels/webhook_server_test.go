package channels

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
)

// serveWebhook serves h on a loopback listener with srv and returns the
// address. A nil srv is a bare http.Server: no timeouts of its own, like the
// one the gateway built before issue 10.
func serveWebhook(t *testing.T, h *WebhookHandler, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if srv == nil {
		srv = &http.Server{Handler: h}
	}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		srv.Close()
		<-done
	})
	return ln.Addr().String()
}

// trickle opens a connection, sends head, then one byte of filler every
// 20ms until the server closes the connection or stop is closed. It
// returns the response status line read back ("" for none) and when the
// connection ended.
func trickle(addr, head string, stop <-chan struct{}) (status string, ended time.Time, err error) {
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		return "", time.Time{}, err
	}
	defer nc.Close()
	if _, err := io.WriteString(nc, head); err != nil {
		return "", time.Time{}, err
	}
	go func() {
		tk := time.NewTicker(20 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				nc.Close()
				return
			case <-tk.C:
				if _, err := nc.Write([]byte("a")); err != nil {
					return
				}
			}
		}
	}()
	r := bufio.NewReader(nc)
	status, _ = r.ReadString('\n')
	io.Copy(io.Discard, r) // until the server closes
	return strings.TrimSpace(status), time.Now(), nil
}

// TestWebhookTricklingBodyCutOff is the attack of issue 10 §4: hundreds of
// connections each sending a body a byte at a time. Even on a server with
// no timeouts of its own, the handler's body deadline ends every one.
func TestWebhookTricklingBodyCutOff(t *testing.T) {
	h, err := NewWebhookHandler(WebhookHandlerOptions{Name: "raven", Secret: testSecret, BodyTimeout: 300 * time.Millisecond,
		Inbound: (&recordInbound{}).inbound, Clock: clock.NewFake(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveWebhook(t, h, nil)
	stop := make(chan struct{})
	// The test's own guard: a connection still open after this is a failure.
	guard := time.AfterFunc(10*time.Second, func() { close(stop) })
	defer guard.Stop()
	head := "POST /hooks/raven HTTP/1.1\r\nHost: x\r\nContent-Length: 60000\r\n" + SignatureHeader + ": t=1,v1=00\r\n\r\n"
	const n = 200
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, ended, err := trickle(addr, head, stop)
			switch {
			case err != nil:
				errs <- err
			case ended.Sub(start) > 8*time.Second:
				errs <- fmt.Errorf("trickling connection stayed open %v", ended.Sub(start))
			case !strings.Contains(status, "408"):
				errs <- fmt.Errorf("status %q, want 408", status)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestWebhookServerCutsTricklingHeaders: the server the gateway runs the
// webhook on bounds the header phase too (slowloris).
func TestWebhookServerCutsTricklingHeaders(t *testing.T) {
	h, err := NewWebhookHandler(WebhookHandlerOptions{Name: "raven", Secret: testSecret,
		Inbound: (&recordInbound{}).inbound, Clock: clock.NewFake(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	srv := NewWebhookServer(h, WebhookServerOptions{ReadHeaderTimeout: 300 * time.Millisecond})
	if srv.ReadTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 || srv.WriteTimeout <= 0 {
		t.Fatalf("server limits not set: %+v", srv)
	}
	addr := serveWebhook(t, h, srv)
	stop := make(chan struct{})
	guard := time.AfterFunc(10*time.Second, func() { close(stop) })
	defer guard.Stop()
	start := time.Now()
	_, ended, err := trickle(addr, "POST /hooks/raven HTTP/1.1\r\nHost: x\r\nX-Slow: ", stop)
	if err != nil {
		t.Fatal(err)
	}
	if d := ended.Sub(start); d > 8*time.Second {
		t.Fatalf("header trickle lasted %v", d)
	}
}

// TestWebhookOversizeBodyOverHTTP: a body over MaxBody gets 413 whether it
// announces its length or is chunked, without the server reading it all.
func TestWebhookOversizeBodyOverHTTP(t *testing.T) {
	rec := &recordInbound{}
	h, err := NewWebhookHandler(WebhookHandlerOptions{Name: "raven", Secret: testSecret, MaxBody: 1024,
		Inbound: rec.inbound, Clock: clock.NewFake(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveWebhook(t, h, NewWebhookServer(h, WebhookServerOptions{}))
	big := `{"chat_id":"a","text":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(big)
		if chunked {
			body = io.MultiReader(strings.NewReader(big)) // hides the length
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks/raven", body)
		req.Header.Set(SignatureHeader, Sign(testSecret, epoch, []byte(big)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil && !errors.Is(err, io.EOF) && !strings.Contains(err.Error(), "reset") && !strings.Contains(err.Error(), "broken pipe") {
			t.Fatal(err)
		}
		if err != nil {
			// The server may close before the client has sent it all.
			t.Logf("chunked=%v: connection closed mid-upload: %v", chunked, err)
		} else {
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Fatalf("chunked=%v: %d, want 413", chunked, resp.StatusCode)
			}
		}
	}
	if len(rec.reqs) != 0 {
		t.Fatal("oversize body reached inbound")
	}
	http.DefaultClient.CloseIdleConnections()
}

// TestWebhookSlowDispatchKeepsContext: the body deadline ends with the
// body (net/http lifts it at EOF); a dispatch that runs past it still has a
// live request context, so a slow submit is not cancelled.
func TestWebhookSlowDispatchKeepsContext(t *testing.T) {
	release := make(chan struct{})
	ctxErr := make(chan error, 1)
	h, err := NewWebhookHandler(WebhookHandlerOptions{Name: "raven", Secret: testSecret, BodyTimeout: 50 * time.Millisecond,
		Clock: clock.Real(), Inbound: func(ctx context.Context, _ spine.TurnRequest) error {
			<-release
			ctxErr <- ctx.Err()
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveWebhook(t, h, nil)
	body := `{"chat_id":"a","text":"slow"}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/hooks/raven", strings.NewReader(body))
	req.Header.Set(SignatureHeader, Sign(testSecret, time.Now(), []byte(body)))
	done := make(chan int, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	// Past the body deadline before the dispatch returns.
	time.AfterFunc(300*time.Millisecond, func() { close(release) })
	if err := <-ctxErr; err != nil {
		t.Fatalf("request context ended during the dispatch: %v", err)
	}
	if code := <-done; code != http.StatusAccepted {
		t.Fatalf("status %d", code)
	}
	http.DefaultClient.CloseIdleConnections()
}
