package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/agent"
	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/chat"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/gateway"
)

// A cron delivery to cli fired by the gateway reaches `raven chat` through
// chat.attach, with the proactive marker; with no chat attached it is kept
// in the outbox (never dropped) and shown when the chat attaches; after a
// gateway restart the chat follows the new one.
func TestChatFollowsGatewayProactiveMessages(t *testing.T) {
	dir := t.TempDir()
	const text = "Stand up and stretch."
	// No auto-decay: this test lets the job fire more often than the default allows.
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"cron": {"decay_after": 0}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runRavenIO(t, "", "--data-dir", dir, "cron", "add", "--name", "stretch", "--message", text,
		"--every", "1s", "--deliver", "--channel", "cli")
	if err != nil {
		t.Fatalf("cron add: %v %s", err, errOut)
	}
	jobID := strings.TrimSpace(out)
	runs := cron.NewRunLog(filepath.Join(dir, "cron", "runs.jsonl"))
	outcomes := func() map[cron.Status]int {
		rs, err := runs.Tail(jobID, 1000)
		if err != nil {
			t.Fatal(err)
		}
		n := map[cron.Status]int{}
		for _, r := range rs {
			n[r.Outcome]++
		}
		return n
	}

	gw := startGatewayChild(t, dir)
	eventually(t, "a fire kept in the outbox with no chat attached", func() bool { return outboxPending(t, dir) > 0 })
	if n := outcomes()[cron.StatusUndelivered]; n != 0 {
		t.Fatalf("%d fires dropped undelivered with no chat attached", n)
	}

	// The chat side: its CLI outlet, following cli:direct on the gateway.
	var term lockedBuffer
	cli := channels.NewCLI(&term)
	var attaches atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	followed := make(chan error, 1)
	go func() {
		followed <- chat.Follow(ctx, chat.FollowOptions{
			Conversation: "cli:direct", Deliver: cli.Deliver,
			MinBackoff: 20 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
			OnAttach: func() { attaches.Add(1) },
			Dial: func(ctx context.Context) (*controlapi.Client, error) {
				return chat.DialGateway(ctx, filepath.Join(dir, "raven.sock"), filepath.Join(dir, "operator.token"))
			},
		})
	}()
	defer func() {
		cancel()
		if err := <-followed; err != nil {
			t.Errorf("Follow: %v", err)
		}
	}()
	want := channels.ProactiveMarker + text + "\n"
	eventually(t, "the attach", func() bool { return attaches.Load() == 1 })
	eventually(t, "the cron message in chat's output", func() bool { return strings.Contains(term.String(), want) })
	eventually(t, "a delivered fire", func() bool { return outcomes()[cron.StatusDelivered] > 0 })
	eventually(t, "the outbox emptied by the attach", func() bool { return outboxPending(t, dir) == 0 })
	for _, line := range strings.SplitAfter(term.String(), "\n") {
		if line != "" && line != want {
			t.Errorf("unexpected output line %q", line)
		}
	}

	// Restart: the chat reattaches quietly and keeps receiving.
	gw.stop(t)
	seen := strings.Count(term.String(), want)
	gw = startGatewayChild(t, dir)
	eventually(t, "the reattach", func() bool { return attaches.Load() == 2 })
	eventually(t, "a message from the new gateway", func() bool { return strings.Count(term.String(), want) > seen })
	gw.stop(t)
}

// A real `raven chat` beside a gateway shows what the gateway sends to
// cli:direct (here: the reply to a chat.send turn run in the gateway), and
// ends cleanly, follower included, at end of input.
func TestChatProcessShowsGatewayMessages(t *testing.T) {
	dir := t.TempDir()
	gw := startGatewayChild(t, dir)
	c := gw.dial(t)

	cmd := exec.Command(os.Args[0], "--data-dir", dir, "chat")
	cmd.Env = append(os.Environ(), childEnv+"=1", "RAVEN_MODEL=")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // never hang on a pipe a stray grandchild holds
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})

	// The gateway has no model, so its reply explains that; it reaches the
	// terminal only through chat.attach. Resend until the chat is attached.
	reply := strings.SplitN(agent.NoModelReply, "\n", 2)[0]
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stdout.String(), reply) {
		if time.Now().After(deadline) {
			t.Fatalf("gateway reply never reached raven chat\nstdout: %s\nstderr: %s\ngateway: %s", stdout.String(), stderr.String(), gw.log.String())
		}
		invoke(t, c, api.ChatSend, api.ChatSendParams{Conversation: "cli:direct", Text: "hello from the TUI"})
		waitUntil(300*time.Millisecond, func() bool { return strings.Contains(stdout.String(), reply) })
	}
	if strings.Contains(stdout.String(), channels.ProactiveMarker) {
		t.Errorf("a reply was marked proactive:\n%s", stdout.String())
	}

	stdin.Close() // Ctrl-D
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("raven chat: %v\n%s", waitErr, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("raven chat did not exit at end of input\n%s", stderr.String())
	}
	gw.stop(t)
}

// waitUntil polls cond for at most d and reports whether it held.
// invoke is a bounded typed control-API call that fails the test on error.
func invoke[Req, Resp any](t *testing.T, c *controlapi.Client, m api.Method[Req, Resp], req Req) Resp {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := controlapi.Invoke(ctx, c, m, req)
	if err != nil {
		t.Fatalf("%s: %v", m, err)
	}
	return resp
}

func waitUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	return true
}

// outboxPending is what a running gateway reports waiting in its outbox.
func outboxPending(t *testing.T, dir string) int {
	t.Helper()
	out, err := runRaven(t, "", "--data-dir", dir, "gateway", "status", "--json")
	if err != nil {
		t.Fatal(err, out)
	}
	var st struct {
		Gateway gateway.Status `json:"gateway"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err, out)
	}
	return st.Gateway.OutboxPending
}
