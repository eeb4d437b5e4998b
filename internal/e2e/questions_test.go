package e2e

import (
	"github.com/raven-agent/raven/internal/controlapi/api"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/questions"
)

// gitRun runs git in dir, failing t on error.
func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// linkedWorktree makes a repository and a registered linked worktree of
// it with `git worktree add`, and returns the worktree.
func linkedWorktree(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	repo := filepath.Join(root, "repo")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun(t, repo, "init", "-q")
	gitRun(t, repo, "commit", "-q", "--allow-empty", "-m", "init")
	wt := filepath.Join(root, "feature")
	gitRun(t, repo, "worktree", "add", "-q", wt)
	return wt
}

// ownerTurn sends text on conv through the gateway's control socket and
// returns the model request that turn made.
func ownerTurn(t *testing.T, e *Env, conv, text string) fakeopenai.Request {
	t.Helper()
	Call(e, api.ChatSend, api.ChatSendParams{Conversation: conv, Text: text})
	var got fakeopenai.Request
	e.Eventually(20*time.Second, "model request for "+text, func() bool {
		for _, r := range e.Model.Requests() {
			if r.LastUser() == text {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

func openOwner(t *testing.T, e *Env, conv, dir string) questions.OpenResult {
	t.Helper()
	return Call(e, api.ConversationsOpen, questions.OpenParams{Conversation: conv, Workspace: dir})
}

// Every real owner-workspace turn carries the read-only membership fact in
// the request the model receives; it never writes into the directory.
func TestOwnerTurnCarriesMembershipFact(t *testing.T) {
	e := newEnv(t, Options{})
	g := e.StartGateway()
	defer g.Stop()
	cases := []struct {
		name string
		dir  func(t *testing.T) string
		// after runs between binding and the turn.
		after func(t *testing.T, dir string)
		want  questions.MembershipStatus
	}{
		{"registered worktree", linkedWorktree, nil, questions.Member},
		{"plain directory", func(t *testing.T) string { return t.TempDir() }, nil, questions.NotMember},
		{"recreated directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "d") }, func(t *testing.T, dir string) {
			// rm -rf D && mkdir D: ext4 may hand the new directory the old
			// inode; the birth time still tells them apart.
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}, questions.MembershipUnknown},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := c.dir(t)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			before := listDir(t, dir)
			conv := "tui:fact" + string(rune('a'+i))
			openOwner(t, e, conv, dir)
			if c.after != nil {
				c.after(t, dir)
				before = listDir(t, dir)
			}
			req := ownerTurn(t, e, conv, "hello from "+c.name)
			want := "Project membership of " + dir + ": " + string(c.want)
			if !strings.Contains(req.System(), want) {
				t.Fatalf("model request lacks %q; system prompt:\n%s", want, req.System())
			}
			if after := listDir(t, dir); after != before {
				t.Fatalf("the turn wrote into the workspace: before %q after %q", before, after)
			}
		})
	}
}

func listDir(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return strings.Join(names, ",")
}

// The model is offered conversation_question only where a question can be
// held: an owner conversation, not a room or global one (and no fact
// there either).
func TestQuestionToolOfferedOnlyInOwnerConversations(t *testing.T) {
	e := newEnv(t, Options{})
	g := e.StartGateway()
	defer g.Stop()
	wt := linkedWorktree(t)
	openOwner(t, e, "tui:owner", wt)
	e.MustRun("conversations", "new", "--kind", "room", "--id", "tui:room")
	e.MustRun("conversations", "new", "--kind", "global", "--id", "tui:global")
	cases := []struct {
		conv    string
		offered bool
	}{
		{"tui:owner", true},
		{"tui:room", false},
		{"tui:global", false},
	}
	for _, c := range cases {
		t.Run(c.conv, func(t *testing.T) {
			req := ownerTurn(t, e, c.conv, "which tools in "+c.conv)
			if got := req.HasTool("conversation_question"); got != c.offered {
				t.Fatalf("conversation_question offered = %v in %s, want %v (tools %v)", got, c.conv, c.offered, req.ToolNames())
			}
			if !req.HasTool("read_file") {
				t.Fatalf("ordinary tools missing in %s: %v", c.conv, req.ToolNames())
			}
			if got := strings.Contains(req.System(), "Project membership"); got != c.offered {
				t.Fatalf("membership fact present = %v in %s, want %v", got, c.conv, c.offered)
			}
		})
	}
}

// askOnce scripts the model to leave one choice question on the next turn
// of conv, runs that turn, and returns the pending snapshot.
func askOnce(t *testing.T, e *Env, conv, question string) questions.Snapshot {
	t.Helper()
	e.Model.Enqueue(fakeopenai.Call("conversation_question", map[string]any{"question": question, "options": []string{"tea", "coffee"}}),
		fakeopenai.Text("asked."))
	Call(e, api.ChatSend, api.ChatSendParams{Conversation: conv, Text: "ask me: " + question})
	var snap questions.Snapshot
	e.Eventually(20*time.Second, "question pending", func() bool {
		r := e.Run("conversations", "questions", conv, "--json")
		if r.Code != 0 {
			return false
		}
		snap = questions.Snapshot{}
		r.JSON(t, &snap)
		return snap.Status == "pending" && snap.Request != nil && snap.Request.Question == question
	})
	return snap
}

func answerArgs(conv string, s questions.Snapshot, option string, extra ...string) []string {
	args := []string{"conversations", "answer", conv, s.Request.RequestID, "--incarnation", s.Incarnation,
		"--revision", strconv.FormatInt(s.Revision, 10), "--option", option, "--json"}
	return append(args, extra...)
}

func wantCode(t *testing.T, r Result, code int, what string) {
	t.Helper()
	if r.Code != code {
		t.Fatalf("%s: exit %d, want %d\n%s", what, r.Code, code, r)
	}
}

// The whole lifecycle through the CLI against a real gateway: new, a
// question the model leaves, an answer from a second device that took
// control, the same answer again, a different one, reset, the offline
// refusal and the restart that cancels — with the documented exit codes.
func TestOwnerQuestionLifecycleCLI(t *testing.T) {
	e := newEnv(t, Options{})
	g := e.StartGateway()
	wt := linkedWorktree(t)
	const conv = "tui:life"
	wantCode(t, e.Run("conversations", "new", "--workspace", wt, "--id", conv, "--json"), 0, "new")
	wantCode(t, e.Run("conversations", "new", "--id", "tui:nodir"), 2, "new owner without --workspace")

	tok := strings.TrimSpace(e.MustRun("auth", "create", "--role", "device", "--name", "phone").Stdout)
	phone := filepath.Join(e.Home, "phone.token")
	if err := os.WriteFile(phone, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	snap := askOnce(t, e, conv, "Tea or coffee while you review?")
	tea, coffee := snap.Request.Options[0].OptionID, snap.Request.Options[1].OptionID

	wantCode(t, e.Run(answerArgs(conv, snap, tea, "--token-file", phone)...), 4, "device answer before take control")
	wantCode(t, e.Run("conversations", "take", conv, "--token-file", phone), 0, "take")
	first := e.Run(answerArgs(conv, snap, tea, "--token-file", phone)...)
	wantCode(t, first, 0, "answer")
	var r1, r2 questions.Receipt
	first.JSON(t, &r1)
	dup := e.Run(answerArgs(conv, snap, tea, "--token-file", phone)...)
	wantCode(t, dup, 0, "duplicate answer")
	dup.JSON(t, &r2)
	if r1.ReceiptID == "" || r1.ReceiptID != r2.ReceiptID || r1.RunID != r2.RunID {
		t.Fatalf("duplicate answer got another receipt: %+v vs %+v", r1, r2)
	}
	wantCode(t, e.Run(answerArgs(conv, snap, coffee, "--token-file", phone)...), 3, "different answer")
	wantCode(t, e.Run("conversations", "answer", conv, snap.Request.RequestID, "--option", tea), 2, "answer without --incarnation")
	wantCode(t, e.Run("conversations", "release", conv, "--token-file", phone), 0, "release")

	// Reset rotates the incarnation and cancels the pending question.
	snap2 := askOnce(t, e, conv, "Short or long summaries?")
	wantCode(t, e.Run("conversations", "reset", conv), 0, "reset")
	var after questions.ConversationView
	e.MustRun("conversations", "show", conv, "--json").JSON(t, &after)
	if after.Incarnation == snap2.Incarnation {
		t.Fatalf("reset kept incarnation %s", after.Incarnation)
	}
	wantCode(t, e.Run(answerArgs(conv, snap2, snap2.Request.Options[0].OptionID)...), 3, "answer to a reset question")

	// Offline: the answer is refused with exit 1 and the question stays.
	snap3 := askOnce(t, e, conv, "Which branch first?")
	g.Stop()
	off := e.Run(answerArgs(conv, snap3, snap3.Request.Options[0].OptionID)...)
	wantCode(t, off, 1, "answer with no gateway")
	if !strings.Contains(off.Stderr, "no gateway running") {
		t.Fatalf("offline refusal does not say why:\n%s", off)
	}
	var still questions.Snapshot
	e.MustRun("conversations", "questions", conv, "--json").JSON(t, &still)
	if still.Status != "pending" || still.Request == nil || still.Request.RequestID != snap3.Request.RequestID {
		t.Fatalf("offline answer changed the question: %+v", still)
	}

	// A restart cancels it (Recover); nothing is replayed.
	g = e.StartGateway()
	defer g.Stop()
	var rec questions.Snapshot
	e.MustRun("conversations", "questions", conv, "--request", snap3.Request.RequestID, "--json").JSON(t, &rec)
	if rec.Receipt == nil || rec.Receipt.Status != "cancelled" || rec.Receipt.Reason != "restart" {
		t.Fatalf("restart did not cancel the question: %+v", rec)
	}
}

// `raven chat --workspace` binds cli:direct as an owner conversation (no
// gateway: through the chat's own runtime) and its turn carries the fact;
// `raven chat --native CONV` beside a gateway claims the native seat over
// the control API — cancelling the pending question — and gives it back
// at exit.
func TestChatBindsWorkspaceAndNativeSeat(t *testing.T) {
	e := newEnv(t, Options{})
	wt := linkedWorktree(t)
	e.MustRun("chat", "--workspace", wt, "-m", "standalone hello")
	var found bool
	for _, r := range e.Model.Requests() {
		if r.LastUser() == "standalone hello" {
			found = strings.Contains(r.System(), "Project membership of "+wt+": member") && r.HasTool("conversation_question")
		}
	}
	if !found {
		t.Fatalf("standalone chat turn lacks the member fact or the question tool: %v", e.Model.Requests())
	}
	var direct questions.ConversationView
	e.MustRun("conversations", "show", "cli:direct", "--json").JSON(t, &direct)
	if direct.Kind != questions.KindOwner || direct.Workspace.Path != wt {
		t.Fatalf("cli:direct after chat --workspace: %+v", direct.Conversation)
	}
	wantCode(t, e.Run("chat", "--native", "nocolon", "-m", "x"), 2, "chat --native with a bad conversation")

	g := e.StartGateway()
	defer g.Stop()
	const conv = "tui:seat"
	openOwner(t, e, conv, wt)
	snap := askOnce(t, e, conv, "Which editor do you use?")
	e.MustRun("chat", "--native", conv, "-m", "the seat speaks")
	var got questions.Snapshot
	e.MustRun("conversations", "questions", conv, "--request", snap.Request.RequestID, "--json").JSON(t, &got)
	if got.Receipt == nil || got.Receipt.Status != "cancelled" || got.Receipt.Reason != questions.ReasonNativeTakeover {
		t.Fatalf("native takeover did not cancel the question: %+v", got.Receipt)
	}
	var after questions.ConversationView
	e.MustRun("conversations", "show", conv, "--json").JSON(t, &after)
	if after.NativeOwner != "" {
		t.Fatalf("native seat not released at exit: %q", after.NativeOwner)
	}
}
