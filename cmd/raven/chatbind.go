package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/chat"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/spine"
)

// chatBinding is what `raven chat` binds its conversation as: an owner
// conversation in a workspace, or (with --native) the native seat.
type chatBinding struct {
	workspace string // --workspace; "" means the default (where chat started)
	native    string // --native CONV
}

// conversation is the conversation the chat talks on.
func (b chatBinding) conversation() string {
	if b.native != "" {
		return b.native
	}
	return runtime.CLIConversation
}

// validate checks the flags before anything is built.
func (b chatBinding) validate() error {
	if b.native != "" {
		if _, _, ok := spine.SplitConversationKey(b.native); !ok {
			return usageErr(fmt.Errorf("chat --native %q: want channel:chat_id, e.g. cli:seat", b.native))
		}
		if b.workspace != "" {
			return usageErr(errors.New("chat: --native and --workspace exclude each other: a native-seat conversation has no owner workspace"))
		}
	}
	return nil
}

// resolveWorkspace is --workspace made absolute, or the directory the
// command was started in when that is not the data dir. ok is false when
// the session has no workspace (then it holds no questions).
func resolveWorkspace(flag, dataDir string) (string, bool, error) {
	if flag != "" {
		abs, err := filepath.Abs(flag)
		if err != nil {
			return "", false, usageErr(fmt.Errorf("--workspace %q: %w", flag, err))
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return "", false, usageErr(fmt.Errorf("--workspace %q: not an existing directory", flag))
		}
		return abs, true, nil
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", false, nil
	}
	dir, ok := questions.DefaultWorkspace(cwd, dataDir)
	return dir, ok, nil
}

// conversationOps is the part of the lifecycle the chat needs, served by a
// gateway over the control API or by the chat's own runtime.
type conversationOps interface {
	open(ctx context.Context, conv, dir string) (questions.OpenResult, error)
	native(ctx context.Context, conv, seat string, release bool) error
}

type gatewayConversations struct{ c *controlapi.Client }

func (g gatewayConversations) open(ctx context.Context, conv, dir string) (questions.OpenResult, error) {
	return controlapi.Invoke(ctx, g.c, api.ConversationsOpen, questions.OpenParams{Conversation: conv, Workspace: dir})
}

func (g gatewayConversations) native(ctx context.Context, conv, seat string, release bool) error {
	_, err := controlapi.Invoke(ctx, g.c, api.ConversationsNative, questions.NativeParams{Conversation: conv, Seat: seat, Release: release})
	return err
}

// localConversations works on the chat runtime's own store as the local
// operator credential (made if the data dir has none yet).
type localConversations struct{ rt *runtime.Runtime }

func (l localConversations) operator(ctx context.Context) (auth.Principal, error) {
	path := l.rt.Paths().OperatorToken()
	if _, err := l.rt.Auth().EnsureOperatorToken(ctx, path); err != nil {
		return auth.Principal{}, err
	}
	tok, err := auth.ReadTokenFile(path)
	if err != nil {
		return auth.Principal{}, err
	}
	return l.rt.Auth().Verify(ctx, tok)
}

func (l localConversations) open(ctx context.Context, conv, dir string) (questions.OpenResult, error) {
	p, err := l.operator(ctx)
	if err != nil {
		return questions.OpenResult{}, err
	}
	return l.rt.Questions().OpenOwner(ctx, p, conv, dir)
}

func (l localConversations) native(ctx context.Context, conv, seat string, release bool) error {
	if release {
		_, err := l.rt.Questions().ReleaseNative(ctx, conv, seat)
		return err
	}
	_, err := l.rt.Questions().ClaimNative(ctx, conv, seat)
	return err
}

// bindChat binds the chat's conversation before the first turn: a native
// seat is claimed (cancelling a pending question and stopping an accepted
// answer's unstarted continuation, before this REPL reads a line), an owner
// conversation is created or re-bound to its workspace. It goes through a
// running gateway when there is one, else through rt's store. The returned
// function releases what was claimed; call it when the chat ends. A failed
// owner binding is reported on notice and the chat carries on without
// questions; a failed native claim is an error (the seat was asked for).
func bindChat(ctx context.Context, rt *runtime.Runtime, b chatBinding, notice io.Writer) (func(), error) {
	ops, closeOps, err := chatConversationOps(ctx, rt)
	if err != nil {
		if b.native != "" {
			return nil, fmt.Errorf("chat --native %s: %w", b.native, err)
		}
		fmt.Fprintf(notice, "Owner conversation not bound (no questions here): %v\n", err)
		return func() {}, nil
	}
	if b.native != "" {
		host, _ := os.Hostname()
		seat := "repl:" + host + ":" + strconv.Itoa(os.Getpid())
		if err := ops.native(ctx, b.native, seat, false); err != nil {
			closeOps()
			return nil, fmt.Errorf("chat --native %s: claim the native seat: %w", b.native, err)
		}
		fmt.Fprintf(notice, "Native seat of %s claimed (%s): no owner question can be held there while it is yours.\n", b.native, seat)
		return func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := ops.native(rctx, b.native, seat, true); err != nil {
				rt.Logger().Warn("native seat not released", "conversation", b.native, "seat", seat, "err", err)
			}
			closeOps()
		}, nil
	}
	defer closeOps()
	dir, ok, err := resolveWorkspace(b.workspace, rt.Paths().Root)
	if err != nil || !ok {
		return func() {}, err
	}
	res, err := ops.open(ctx, b.conversation(), dir)
	if err != nil {
		fmt.Fprintf(notice, "Owner conversation not bound to %s (no questions here): %v\n", dir, err)
		return func() {}, nil
	}
	rt.Logger().Debug("owner conversation bound", "conversation", res.ID, "workspace", dir, "created", res.Created, "rebound", res.Rebound)
	return func() {}, nil
}

// chatConversationOps reaches the gateway when one runs on the data dir,
// and falls back to the runtime only when nothing listens: a gateway that
// listens but refuses must not be bypassed.
func chatConversationOps(ctx context.Context, rt *runtime.Runtime) (conversationOps, func(), error) {
	p := rt.Paths()
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := chat.DialGateway(dctx, p.Socket(), p.OperatorToken())
	switch {
	case err == nil:
		return gatewayConversations{c}, func() { c.Close() }, nil
	case errors.Is(err, chat.ErrNoGateway):
		return localConversations{rt}, func() {}, nil
	default:
		return nil, nil, err
	}
}
