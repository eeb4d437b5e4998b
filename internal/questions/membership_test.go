package questions

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
