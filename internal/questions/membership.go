package questions

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MembershipStatus is the project-membership fact of a workspace directory.
type MembershipStatus string

const (
	Member            MembershipStatus = "member"
	NotMember         MembershipStatus = "not_member"
	MembershipUnknown MembershipStatus = "unknown"
)

// MembershipFact is a read-only fact about whether a directory belongs to a
// Git project (its main worktree or a registered linked worktree).
type MembershipFact struct {
	Dir    string           `json:"dir"`
	Status MembershipStatus `json:"status"`
	// Root is the worktree root the directory belongs to (member only).
	Root   string `json:"root,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// String renders the fact for a turn's context.
func (f MembershipFact) String() string {
	s := fmt.Sprintf("Project membership of %s: %s", f.Dir, f.Status)
	if f.Root != "" {
		s += " (Git worktree " + f.Root + ")"
	}
	if f.Reason != "" {
		s += " — " + f.Reason
	}
	return s + ". Read-only context: it does not enrol the directory, and no questionnaire is implied."
}

type gitEntry struct {
	root   string // directory holding .git
	common string // the repository's common git dir (real path)
}

// Membership reports whether dir is inside a Git worktree: the main worktree
// of a repository or a linked worktree registered in it. It only reads the
// filesystem; it never enrols or modifies anything. Nested distinct
// repositories, unregistered or dangling worktree links and any failed check
// give unknown, never a guess.
func Membership(ctx context.Context, dir string) MembershipFact {
	f := MembershipFact{Dir: dir, Status: MembershipUnknown}
	abs, err := filepath.Abs(dir)
	if err != nil {
		f.Reason = err.Error()
		return f
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		f.Reason = "cannot resolve directory: " + err.Error()
		return f
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		f.Reason = "not an existing directory"
		return f
	}
	var found []gitEntry
	for d := real; ; {
		if err := ctx.Err(); err != nil {
			f.Reason = err.Error()
			return f
		}
		fi, err := os.Lstat(filepath.Join(d, ".git"))
		switch {
		case err == nil:
			e, err := resolveGit(d, fi)
			if err != nil {
				f.Reason = err.Error()
				return f
			}
			found = append(found, e)
		case !os.IsNotExist(err):
			f.Reason = "cannot inspect " + d + ": " + err.Error()
			return f
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if len(found) == 0 {
		f.Status = NotMember
		return f
	}
	for _, e := range found[1:] {
		if e.common != found[0].common {
			f.Reason = "nested inside another repository (" + e.root + "): ambiguous"
			return f
		}
	}
	f.Status, f.Root = Member, found[0].root
	return f
}

// resolveGit identifies the repository of the .git entry in d.
func resolveGit(d string, fi os.FileInfo) (gitEntry, error) {
	gitPath := filepath.Join(d, ".git")
	switch {
	case fi.IsDir():
		if _, err := os.Stat(filepath.Join(gitPath, "HEAD")); err != nil {
			return gitEntry{}, fmt.Errorf("%s is not a Git directory", gitPath)
		}
		if _, err := os.Stat(filepath.Join(gitPath, "commondir")); err == nil {
			return gitEntry{}, fmt.Errorf("%s is an unusual shared Git directory", gitPath)
		}
		common, err := filepath.EvalSymlinks(gitPath)
		if err != nil {
			return gitEntry{}, err
		}
		return gitEntry{root: d, common: common}, nil
	case fi.Mode().IsRegular():
		return resolveLinkedWorktree(d, gitPath)
	}
	return gitEntry{}, fmt.Errorf("%s is neither a file nor a directory", gitPath)
}

// resolveLinkedWorktree accepts a .git file only if it points at an admin
// directory <common>/worktrees/<name> whose gitdir points back at it: that
// is what `git worktree add` registers (and `git worktree list` shows).
func resolveLinkedWorktree(d, gitPath string) (gitEntry, error) {
	target, err := readGitLine(gitPath, "gitdir: ")
	if err != nil {
		return gitEntry{}, err
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(d, target)
	}
	admin, err := filepath.EvalSymlinks(target)
	if err != nil {
		return gitEntry{}, fmt.Errorf("worktree link of %s is dangling (not registered)", d)
	}
	back, err := readGitLine(filepath.Join(admin, "gitdir"), "")
	if err != nil {
		return gitEntry{}, fmt.Errorf("%s is not a registered worktree (submodule or unknown layout)", d)
	}
	if !filepath.IsAbs(back) { // worktree.useRelativePaths
		back = filepath.Join(admin, back)
	}
	backReal, err1 := filepath.EvalSymlinks(back)
	selfReal, err2 := filepath.EvalSymlinks(gitPath)
	if err1 != nil || err2 != nil || backReal != selfReal {
		return gitEntry{}, fmt.Errorf("worktree registration of %s points elsewhere", d)
	}
	commonRel, err := readGitLine(filepath.Join(admin, "commondir"), "")
	if err != nil {
		return gitEntry{}, fmt.Errorf("%s: worktree admin dir has no commondir", d)
	}
	if !filepath.IsAbs(commonRel) {
		commonRel = filepath.Join(admin, commonRel)
	}
	common, err := filepath.EvalSymlinks(commonRel)
	if err != nil {
		return gitEntry{}, fmt.Errorf("%s: repository of the worktree is missing", d)
	}
	if filepath.Dir(admin) != filepath.Join(common, "worktrees") {
		return gitEntry{}, fmt.Errorf("%s: worktree admin dir is outside its repository", d)
	}
	return gitEntry{root: d, common: common}, nil
}

// readGitLine reads the first line of a small Git metadata file, requiring
// and stripping prefix.
func readGitLine(path, prefix string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	line, err := bufio.NewReader(io.LimitReader(fh, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if !strings.HasPrefix(line, prefix) || len(line) == len(prefix) {
		return "", fmt.Errorf("%s: unexpected content", path)
	}
	return strings.TrimPrefix(line, prefix), nil
}

// ConversationMembership is the membership fact of an owner conversation's
// workspace. A workspace that changed since it was bound is unknown.
func (s *Store) ConversationMembership(ctx context.Context, conv string) (MembershipFact, error) {
	c, err := s.Conversation(ctx, conv)
	if err != nil {
		return MembershipFact{}, err
	}
	f := MembershipFact{Dir: c.Workspace.Path, Status: MembershipUnknown}
	if c.Workspace.IsZero() {
		f.Reason = "no workspace bound"
		return f, nil
	}
	if err := c.Workspace.verifyWith(s.identify); err != nil {
		f.Reason = "workspace changed since it was bound"
		return f, nil
	}
	f = Membership(ctx, c.Workspace.Path)
	if err := c.Workspace.verifyWith(s.identify); err != nil {
		return MembershipFact{Dir: c.Workspace.Path, Status: MembershipUnknown, Reason: "workspace changed during the check"}, nil
	}
	return f, nil
}

// TurnMembership is the fact the runtime puts in the prompt of every turn
// of an owner conversation bound to a workspace; ok is false for any other
// conversation (the turn then carries no fact). It only reads: it never
// enrols the directory, writes into it, or changes the conversation.
func (s *Store) TurnMembership(ctx context.Context, conv string) (MembershipFact, bool) {
	c, err := s.Conversation(ctx, conv)
	if err != nil || c.Kind != KindOwner || c.Workspace.IsZero() {
		return MembershipFact{}, false
	}
	f, err := s.ConversationMembership(ctx, conv)
	if err != nil {
		return MembershipFact{Dir: c.Workspace.Path, Status: MembershipUnknown, Reason: "check failed"}, true
	}
	return f, true
}

// PromptLine renders the fact as the one line a turn's system context
// carries.
func (f MembershipFact) PromptLine() string { return f.String() }
