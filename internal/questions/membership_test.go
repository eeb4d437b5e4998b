package questions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_SYSTEM=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func TestMembership(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(base, "repo")
	os.MkdirAll(filepath.Join(repo, "src", "pkg"), 0o755)
	git(t, repo, "init", "-q")
	os.WriteFile(filepath.Join(repo, "README"), []byte("x"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "init")
	git(t, repo, "worktree", "add", "-q", filepath.Join(base, "wt"), "-b", "feature")
	git(t, repo, "worktree", "add", "-q", filepath.Join(repo, ".worktrees", "inner"), "-b", "inner")
	git(t, repo, "worktree", "add", "-q", filepath.Join(base, "gone"), "-b", "gone")
	os.RemoveAll(filepath.Join(repo, ".git", "worktrees", "gone")) // registration removed, link dangles

	plain := filepath.Join(base, "plain")
	os.Mkdir(plain, 0o755)
	nested := filepath.Join(repo, "vendor", "other")
	os.MkdirAll(nested, 0o755)
	git(t, nested, "init", "-q")
	forged := filepath.Join(base, "forged")
	os.Mkdir(forged, 0o755)
	os.WriteFile(filepath.Join(forged, ".git"), []byte("gitdir: "+filepath.Join(repo, ".git", "worktrees", "wt")+"\n"), 0o644)
	garbage := filepath.Join(base, "garbage")
	os.Mkdir(garbage, 0o755)
	os.WriteFile(filepath.Join(garbage, ".git"), []byte("not a git file"), 0o644)
	link := filepath.Join(base, "link")
	os.Symlink(filepath.Join(base, "wt"), link)

	tests := []struct {
		name string
		dir  string
		want MembershipStatus
		root string
	}{
		{"main worktree", repo, Member, repo},
		{"subdirectory of main worktree", filepath.Join(repo, "src", "pkg"), Member, repo},
		{"registered linked worktree", filepath.Join(base, "wt"), Member, filepath.Join(base, "wt")},
		{"linked worktree through a symlink", link, Member, filepath.Join(base, "wt")},
		{"linked worktree inside the main worktree", filepath.Join(repo, ".worktrees", "inner"), Member, filepath.Join(repo, ".worktrees", "inner")},
		{"plain directory", plain, NotMember, ""},
		{"unregistered worktree link", filepath.Join(base, "gone"), MembershipUnknown, ""},
		{"forged link to another worktree's registration", forged, MembershipUnknown, ""},
		{"garbage .git file", garbage, MembershipUnknown, ""},
		{"nested distinct repository", nested, MembershipUnknown, ""},
		{"missing directory", filepath.Join(base, "nope"), MembershipUnknown, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := Membership(context.Background(), tt.dir)
			if f.Status != tt.want || f.Root != tt.root {
				t.Fatalf("Membership(%s) = %+v, want %s root %q", tt.dir, f, tt.want, tt.root)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(plain, ".git")); !os.IsNotExist(err) {
		t.Fatal("membership check enrolled a directory")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if f := Membership(ctx, repo); f.Status != MembershipUnknown {
		t.Fatalf("cancelled check = %+v", f)
	}
}

func TestConversationMembershipChangedSinceBinding(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	h := newHarness(t, nil)
	ctx := context.Background()
	git(t, h.ws, "init", "-q")
	f, err := h.store.ConversationMembership(ctx, ownerConv)
	if err != nil || f.Status != Member {
		t.Fatalf("bound repo = %+v, %v", f, err)
	}
	os.Rename(h.ws, h.ws+".old")
	os.Mkdir(h.ws, 0o755)
	git(t, h.ws, "init", "-q")
	f, err = h.store.ConversationMembership(ctx, ownerConv)
	if err != nil || f.Status != MembershipUnknown {
		t.Fatalf("replaced workspace = %+v, %v", f, err)
	}
}

// The per-turn fact of owner conversations bound through OpenOwner to real
// `git worktree add` directories; other kinds get no fact; nothing is
// written into the directory.
func TestTurnMembership(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	ctx := context.Background()
	h := newHarness(t, nil)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	repo := filepath.Join(base, "repo")
	os.Mkdir(repo, 0o755)
	git(t, repo, "init", "-q")
	os.WriteFile(filepath.Join(repo, "README"), []byte("x"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-q", "-m", "init")
	wt := filepath.Join(base, "wt")
	git(t, repo, "worktree", "add", "-q", wt, "-b", "feature")
	plain := filepath.Join(base, "plain")
	os.Mkdir(plain, 0o755)
	nested := filepath.Join(repo, "vendor", "other")
	os.MkdirAll(nested, 0o755)
	git(t, nested, "init", "-q")

	tests := []struct {
		dir  string
		want MembershipStatus
	}{{wt, Member}, {repo, Member}, {plain, NotMember}, {nested, MembershipUnknown}}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.dir), func(t *testing.T) {
			entries, _ := os.ReadDir(tt.dir)
			conv := "tui:" + filepath.Base(tt.dir)
			if _, err := h.store.OpenOwner(ctx, operator, conv, tt.dir); err != nil {
				t.Fatal(err)
			}
			f, ok := h.store.TurnMembership(ctx, conv)
			if !ok || f.Status != tt.want {
				t.Fatalf("fact = %+v (ok %v), want %s", f, ok, tt.want)
			}
			if line := f.PromptLine(); !strings.Contains(line, string(tt.want)) || strings.Contains(line, "\n") {
				t.Fatalf("prompt line %q", line)
			}
			after, _ := os.ReadDir(tt.dir)
			if len(after) != len(entries) {
				t.Fatalf("the check wrote into %s", tt.dir)
			}
		})
	}
	if _, err := h.store.NewConversation(ctx, operator, "side:1", KindSide, plain); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.store.TurnMembership(ctx, "side:1"); ok {
		t.Fatal("a side conversation got a membership fact")
	}
}
