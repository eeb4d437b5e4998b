package gateway

import (
	"database/sql"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// A second gateway on the same data dir is refused naming the running pid;
// raven chat runs beside it; once the gateway stops, status says so.
func TestGatewaySingleInstance(t *testing.T) {
	dir := t.TempDir()
	model := writeScript(t, scriptReply("chat beside the gateway"))
	gw := startGateway(t, dir, model)
	gw.waitReady(t)
	pid := strconv.Itoa(gw.cmd.Process.Pid)

	out, errOut, code := raven(t, dir, "gateway", "status", "--json")
	var st struct {
		Running bool `json:"running"`
		PID     int  `json:"pid"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || !st.Running || strconv.Itoa(st.PID) != pid {
		t.Fatalf("status --json: code %d, %+v, out %q, stderr %q; want running pid %s", code, st, out, errOut, pid)
	}

	_, errOut, code = raven(t, dir, "--model", model, "gateway")
	if code != 1 || !strings.Contains(errOut, "already running") || !strings.Contains(errOut, "pid "+pid) {
		t.Fatalf("second gateway: exit %d, stderr %q; want exit 1 naming pid %s", code, errOut, pid)
	}

	out, errOut, code = raven(t, dir, "--model", model, "chat", "-m", "hello")
	if code != 0 || strings.TrimSpace(out) != "chat beside the gateway" {
		t.Fatalf("chat -m beside the gateway: exit %d, out %q, stderr %q", code, out, errOut)
	}

	if code, _ := gw.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("gateway exit %d\n%s", code, gw.log.String())
	}
	out, _, code = raven(t, dir, "gateway", "status")
	if code != 3 || !strings.Contains(out, "not running") {
		t.Fatalf("status after stop: exit %d, out %q; want exit 3, not running", code, out)
	}
}

// SIGTERM or SIGINT while a turn runs: the turn finishes within the grace
// period and its reply is persisted, or, past the grace, is cancelled; either
// way the gateway exits 0, removes its socket, closes the database cleanly
// and leaves no temporary or unparsable state file behind.
func TestGatewayGracefulShutdown(t *testing.T) {
	tests := []struct {
		name    string
		sig     syscall.Signal
		grace   string
		command string
		// wantReply: the turn outlives the signal and its reply is stored.
		wantReply bool
		maxStop   time.Duration
	}{
		{"SIGTERM lets the turn finish", syscall.SIGTERM, "10s", "touch started && sleep 1", true, 9 * time.Second},
		{"SIGINT lets the turn finish", syscall.SIGINT, "10s", "touch started && sleep 1", true, 9 * time.Second},
		{"past the grace the turn is cancelled", syscall.SIGTERM, "1s", "touch started && sleep 60", false, 9 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			const final = "finished after the sleep"
			model := writeScript(t, scriptTool("exec", map[string]any{"command": tt.command}), scriptReply(final))
			writeConfig(t, dir, map[string]any{"gateway": map[string]any{"shutdown_grace": tt.grace}})
			// A cron job gives the data dir a JSON state file for the
			// gateway to load and keep.
			if _, errOut, code := raven(t, dir, "cron", "add", "--name", "standup", "--message", "stand-up",
				"--cron", "0 9 * * 1-5", "--tz", "UTC", "--silent"); code != 0 {
				t.Fatalf("cron add: exit %d: %s", code, errOut)
			}
			gw := startGateway(t, dir, model)
			gw.waitReady(t)
			c := gw.dial(t)
			call(t, c, api.ChatSend, api.ChatSendParams{Conversation: "tui:main", Text: "do the slow thing"})
			started := filepath.Join(dir, "workspace", "started")
			eventually(t, "the exec tool to start", func() bool { _, err := os.Stat(started); return err == nil })

			code, took := gw.stop(t, tt.sig, 15*time.Second)
			if code != 0 {
				t.Fatalf("exit %d after %v, want 0\n%s", code, tt.sig, gw.log.String())
			}
			if took > tt.maxStop {
				t.Errorf("took %v to stop, want < %v", took, tt.maxStop)
			}
			if !strings.Contains(gw.log.String(), "gateway stopped") {
				t.Errorf("log lacks \"gateway stopped\":\n%s", gw.log.String())
			}
			got := lastAssistant(t, dir, "tui:main")
			if tt.wantReply && got != final {
				t.Errorf("persisted reply %q, want %q\n%s", got, final, gw.log.String())
			}
			if !tt.wantReply && got == final {
				t.Errorf("turn past the grace period completed; want it cancelled")
			}
			if _, err := os.Stat(gw.socket()); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("socket left behind: %v", err)
			}
			if n := checkCleanDataDir(t, dir); n == 0 {
				t.Errorf("no JSON state file in %s to check", dir)
			}
		})
	}
}

// lastAssistant returns the newest assistant message of conv in raven.db.
func lastAssistant(t *testing.T, dataDir, conv string) string {
	t.Helper()
	db, err := sqlitedb.Open(filepath.Join(dataDir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var content string
	err = db.QueryRow(`SELECT content FROM session_messages WHERE conversation = ? AND role = 'assistant' AND content != ''
		ORDER BY id DESC LIMIT 1`, conv).Scan(&content)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return content
}

// checkCleanDataDir fails on anything a crash mid-write would leave: temp
// files from atomic replaces, SQLite WAL/journal files (a clean close
// checkpoints and removes them), corrupt-aside files, and JSON that does not
// parse. It returns how many JSON files it checked.
func checkCleanDataDir(t *testing.T, dir string) (jsonFiles int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		for _, bad := range []string{".tmp-", ".corrupt-", "-wal", "-shm", "-journal"} {
			if strings.Contains(name, bad) {
				t.Errorf("left behind: %s", path)
			}
		}
		if !d.IsDir() && strings.HasSuffix(name, ".json") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			jsonFiles++
			if !json.Valid(b) {
				t.Errorf("%s does not parse as JSON: %q", path, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return jsonFiles
}

// The control API end to end over the real socket: attach and send get the
// reply as a chat.message notification on the same connection, the event
// log shows the turn, each role gets exactly its authority, and a revoked or
// rotated credential is refused on the next call of an open connection.
func TestGatewayControlAPI(t *testing.T) {
	dir := t.TempDir()
	model := writeScript(t, scriptReply("hello from raven"), scriptReply("second"), scriptReply("third"))
	gw := startGateway(t, dir, model)
	gw.waitReady(t)
	c := gw.dial(t)

	call(t, c, api.ChatAttach, api.ChatAttachParams{Conversation: "tui:main"})
	call(t, c, api.ChatSend, api.ChatSendParams{Conversation: "tui:main", Text: "hi"})
	msg := nextChatMessage(t, c)
	if msg.Conversation != "tui:main" || msg.Content != "hello from raven" || !msg.Reply || msg.Proactive {
		t.Fatalf("chat.message %+v, want the scripted reply on tui:main", msg)
	}

	var kinds []string
	eventually(t, "turn.started and turn.finished in events.tail", func() bool {
		res := call(t, c, api.EventsTail, api.TailParams{Limit: 100})
		kinds = kinds[:0]
		for _, e := range res.Events {
			if e.Conversation == "tui:main" {
				kinds = append(kinds, e.Kind)
			}
		}
		return strings.Join(kinds, ",") == "turn.started,turn.finished"
	})

	// Authority per role, checked on chat.send (control) and events.tail (read).
	roles := []struct {
		name, role string
		readOnly   bool
		canSend    bool
	}{
		{"ro", "device", true, false},
		{"ctl", "device", false, true},
		{"cap", "captain", false, false},
	}
	clients := map[string]*controlapi.Client{}
	for _, r := range roles {
		args := []string{"auth", "create", "--role", r.role, "--name", r.name}
		if r.readOnly {
			args = append(args, "--read-only")
		}
		out, errOut, code := raven(t, dir, args...)
		if code != 0 {
			t.Fatalf("auth create %s: exit %d: %s", r.name, code, errOut)
		}
		rc := dialToken(t, gw.socket(), strings.TrimSpace(out))
		clients[r.name] = rc
		if _, err := callErr(rc, api.EventsTail, api.TailParams{Limit: 1}); err != nil {
			t.Errorf("%s: events.tail: %v", r.name, err)
		}
		_, err := callErr(rc, api.ChatSend, api.ChatSendParams{Conversation: "tui:" + r.name, Text: "hi"})
		switch {
		case r.canSend && err != nil:
			t.Errorf("%s: chat.send: %v", r.name, err)
		case !r.canSend && !controlapi.IsCode(err, controlapi.CodeForbidden):
			t.Errorf("%s: chat.send err %v, want forbidden", r.name, err)
		}
	}

	// Revoke and rotate from another process; the open connections feel it
	// on their next call.
	if _, errOut, code := raven(t, dir, "auth", "revoke", "ro"); code != 0 {
		t.Fatalf("auth revoke: exit %d: %s", code, errOut)
	}
	if _, err := callErr(clients["ro"], api.Ping, api.Empty{}); !controlapi.IsCode(err, controlapi.CodeUnauthorized) {
		t.Errorf("revoked credential: ping err %v, want unauthorized", err)
	}
	newTok, errOut, code := raven(t, dir, "auth", "rotate", "ctl")
	if code != 0 {
		t.Fatalf("auth rotate: exit %d: %s", code, errOut)
	}
	if _, err := callErr(clients["ctl"], api.Ping, api.Empty{}); !controlapi.IsCode(err, controlapi.CodeUnauthorized) {
		t.Errorf("rotated credential: ping err %v, want unauthorized", err)
	}
	call(t, dialToken(t, gw.socket(), strings.TrimSpace(newTok)), api.Ping, api.Empty{})
	// The operator was untouched by all of this.
	call(t, c, api.Ping, api.Empty{})

	if code, _ := gw.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("gateway exit %d\n%s", code, gw.log.String())
	}
}

func nextChatMessage(t *testing.T, c *controlapi.Client) channels.ChatMessage {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case n, ok := <-c.Notifications():
			if !ok {
				t.Fatalf("connection closed: %v", c.Err())
			}
			if n.Method != api.NotifyChatMessage.Name() {
				continue
			}
			var m channels.ChatMessage
			if err := json.Unmarshal(n.Params, &m); err != nil {
				t.Fatalf("chat.message params %s: %v", n.Params, err)
			}
			return m
		case <-timeout:
			t.Fatal("no chat.message within 10s")
		}
	}
}
