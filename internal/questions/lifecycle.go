package questions

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/auth"
)

// MaxListConversations bounds one conversations.list answer.
const MaxListConversations = 200

// LeaseStore is the Take Control part of *auth.Store the lifecycle uses.
type LeaseStore interface {
	TakeControl(ctx context.Context, p auth.Principal, conversation string, ttl time.Duration) (auth.Lease, error)
	Release(ctx context.Context, p auth.Principal, conversation string) (bool, error)
}

// ConversationView is a conversation as conversations.list/show report it:
// the record, whether it can hold a question now (and why not), who holds
// Take Control, and the pending request if any.
type ConversationView struct {
	Conversation
	CanHoldQuestion bool   `json:"can_hold_question"`
	HoldReason      string `json:"hold_reason,omitempty"`
	Controller      string `json:"controller,omitempty"`
	PendingRequest  string `json:"pending_request,omitempty"`
}

// Summary is the one-line state of c for the CLI and the TUI: workspace,
// whether it can hold a question (and why not), native seat, controller,
// pending request.
func (c ConversationView) Summary() string {
	var parts []string
	if c.Workspace.Path != "" {
		parts = append(parts, c.Workspace.Path)
	}
	if c.CanHoldQuestion {
		parts = append(parts, "can hold a question")
	} else {
		parts = append(parts, "no questions ("+c.HoldReason+")")
	}
	if c.NativeOwner != "" {
		parts = append(parts, "native seat "+c.NativeOwner)
	}
	if c.Controller != "" {
		parts = append(parts, "controlled by "+c.Controller)
	}
	if c.PendingRequest != "" {
		parts = append(parts, "pending "+c.PendingRequest)
	}
	return strings.Join(parts, " · ")
}

// CanHoldQuestion reports whether the conversation's record allows a
// question at all: an owner conversation, bound to a workspace and an owner
// credential, with no native owner. The runtime offers the
// conversation_question tool only where it holds; Ask re-checks the live
// facts (workspace identity, credential) on every call.
func CanHoldQuestion(c Conversation) bool {
	return c.Kind == KindOwner && c.NativeOwner == "" && c.Owner != "" && !c.Workspace.IsZero()
}

// Eligible returns nil when conversation conv can hold a question right
// now, with its live checks (workspace identity, owner credential), or the
// typed unavailable error Ask would refuse with. It only reads.
func (s *Store) Eligible(ctx context.Context, conv string) error {
	c, err := s.Conversation(ctx, conv)
	if err != nil {
		return err
	}
	return s.eligible(ctx, c)
}

func (s *Store) view(ctx context.Context, c Conversation) (ConversationView, error) {
	v := ConversationView{Conversation: c}
	if err := s.eligible(ctx, c); err != nil {
		var qe *Error
		if !errors.As(err, &qe) || qe.Code() != CodeUnavailable {
			return v, err
		}
		v.HoldReason = qe.Reason
	} else {
		v.CanHoldQuestion = true
	}
	if ctl := s.opts.Authority.Controllers; ctl != nil {
		v.Controller, _ = ctl.ActiveController(ctx, c.ID)
	}
	err := s.db.QueryRowContext(ctx, `SELECT request_id FROM questions WHERE conversation_id = ? AND status = 'pending'`, c.ID).Scan(&v.PendingRequest)
	if err != nil && !isNoRows(err) {
		return v, fmt.Errorf("questions: pending of %s: %w", c.ID, err)
	}
	return v, nil
}

// ListConversations returns the newest conversations first, at most
// MaxListConversations.
func (s *Store) ListConversations(ctx context.Context, p auth.Principal) ([]ConversationView, error) {
	if err := s.opts.Authority.CanRead(ctx, p); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+convColumns+` FROM conversations ORDER BY updated_at DESC, id LIMIT ?`, MaxListConversations)
	if err != nil {
		return nil, fmt.Errorf("questions: list conversations: %w", err)
	}
	var cs []Conversation
	for rows.Next() {
		c, err := scanConversation(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("questions: list conversations: %w", err)
		}
		cs = append(cs, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("questions: list conversations: %w", err)
	}
	out := make([]ConversationView, 0, len(cs))
	for _, c := range cs {
		v, err := s.view(ctx, c)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// ShowConversation returns one conversation.
func (s *Store) ShowConversation(ctx context.Context, p auth.Principal, id string) (ConversationView, error) {
	if err := checkString("conversation", id, MaxConversationLen, true); err != nil {
		return ConversationView{}, err
	}
	if err := s.opts.Authority.CanRead(ctx, p); err != nil {
		return ConversationView{}, err
	}
	c, err := s.Conversation(ctx, id)
	if err != nil {
		return ConversationView{}, err
	}
	return s.view(ctx, c)
}

// requireOperator admits only a current operator credential: binding a
// conversation to a workspace and an owner is the owner's own act.
func (s *Store) requireOperator(ctx context.Context, p auth.Principal) error {
	if err := s.opts.Authority.current(ctx, p); err != nil {
		return err
	}
	if p.Role != auth.RoleOperator {
		return newErr(CodeForbidden, "not_operator", "only the operator may create or bind conversations, not %s %q", p.Role, p.Name)
	}
	return nil
}

// OpenResult says what conversations.open did.
type OpenResult struct {
	ConversationView
	// Created: the conversation did not exist. Rebound: its workspace or
	// owner credential changed, so it got a fresh incarnation (and a pending
	// question bound to the old binding was cancelled).
	Created bool `json:"created"`
	Rebound bool `json:"rebound"`
}

// OpenOwner creates or re-binds the owner conversation id for the operator
// session p working in dir. A new conversation gets a fresh incarnation;
// an existing one keeps its incarnation while workspace and owner
// credential are unchanged (re-opening the TUI must not destroy a pending
// question), and gets a fresh one, cancelling the pending question, when
// either changed. A conversation of another kind is never turned into an
// owner conversation.
func (s *Store) OpenOwner(ctx context.Context, p auth.Principal, id, dir string) (OpenResult, error) {
	if err := checkString("conversation", id, MaxConversationLen, true); err != nil {
		return OpenResult{}, err
	}
	if err := s.requireOperator(ctx, p); err != nil {
		return OpenResult{}, err
	}
	ws, err := s.bindable(dir)
	if err != nil {
		return OpenResult{}, err
	}
	var res OpenResult
	err = s.tx(ctx, func(tx *sql.Tx, fx *effects) error {
		c, err := loadConversation(ctx, tx, id)
		if CodeOf(err) == CodeNotFound {
			res.Created = true
			return s.insertConversation(ctx, tx, id, KindOwner, ws, p.Name, p.Generation, "")
		}
		if err != nil {
			return err
		}
		if c.Kind != KindOwner {
			return newErr(CodeConflict, "kind", "conversation %s is a %s conversation: it cannot be bound as an owner conversation", id, c.Kind)
		}
		if c.Workspace == ws && c.Owner == p.Name && c.OwnerGeneration == p.Generation {
			return nil
		}
		reason := ReasonOwnerChanged
		if c.Workspace != ws {
			reason = ReasonWorkspaceChanged
		}
		res.Rebound = true
		if _, err := tx.ExecContext(ctx, `UPDATE conversations SET ws_path = ?, ws_dev = ?, ws_ino = ?, ws_btime = ?, owner = ?, owner_generation = ?, incarnation = ? WHERE id = ?`,
			ws.Path, int64(ws.Dev), int64(ws.Ino), ws.BirthNs, p.Name, p.Generation, s.opts.NewID(), id); err != nil {
			return fmt.Errorf("questions: rebind %s: %w", id, err)
		}
		return s.cancelPendingOrBump(ctx, tx, fx, id, reason)
	})
	if err != nil {
		return OpenResult{}, err
	}
	if res.Created || res.Rebound {
		s.log.Info("owner conversation bound", "conversation", id, "workspace", ws.Path, "owner", p.Name, "created", res.Created)
	}
	c, err := s.Conversation(ctx, id)
	if err != nil {
		return OpenResult{}, err
	}
	res.ConversationView, err = s.view(ctx, c)
	return res, err
}

// bindable identifies dir, which must be an absolute path to an existing
// local directory: the server resolves it, so a relative path would mean
// the server's working directory, not the client's.
func (s *Store) bindable(dir string) (WorkspaceID, error) {
	if err := checkString("workspace", dir, 4096, true); err != nil {
		return WorkspaceID{}, err
	}
	if !strings.HasPrefix(dir, "/") {
		return WorkspaceID{}, invalid("workspace %q must be an absolute path", dir)
	}
	ws, err := s.identify(dir)
	if err != nil {
		return WorkspaceID{}, invalid("workspace %s is not an existing local directory: %v", dir, err)
	}
	return ws, nil
}

func (s *Store) insertConversation(ctx context.Context, tx *sql.Tx, id string, kind Kind, ws WorkspaceID, owner string, gen int, native string) error {
	now := s.now()
	_, err := tx.ExecContext(ctx, `INSERT INTO conversations (`+convColumns+`) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, kind, s.opts.NewID(), ws.Path, int64(ws.Dev), int64(ws.Ino), ws.BirthNs, native, owner, gen, now, now)
	if err != nil {
		if strings.Contains(err.Error(), "UNIQUE") {
			return newErr(CodeConflict, "exists", "conversation %q already exists", id)
		}
		return fmt.Errorf("questions: create conversation %s: %w", id, err)
	}
	return nil
}

// cancelPendingOrBump ends the pending question of id with reason, or just
// bumps the revision when there is none: either way the revision moves.
func (s *Store) cancelPendingOrBump(ctx context.Context, tx *sql.Tx, fx *effects, id, reason string) error {
	q, err := pendingQuestion(ctx, tx, id)
	if err != nil {
		return err
	}
	if q != nil {
		_, err = s.terminate(ctx, tx, fx, *q, StatusCancelled, reason, "")
		return err
	}
	_, err = s.bumpRevision(ctx, tx, id)
	return err
}

// NewConversation creates a conversation of kind for the operator p. An
// empty id gets a fresh one ("<kind>:<uuid>"). An owner conversation needs
// a workspace and is owned by p; native, room, global and side
// conversations can be created, but never hold a question.
func (s *Store) NewConversation(ctx context.Context, p auth.Principal, id string, kind Kind, dir string) (ConversationView, error) {
	if kind == "" {
		kind = KindOwner
	}
	if !kind.Valid() {
		return ConversationView{}, invalid("unknown conversation kind %q (want owner, native, room, global or side)", kind)
	}
	if id == "" {
		id = string(kind) + ":" + s.opts.NewID()
	}
	if err := checkString("conversation", id, MaxConversationLen, true); err != nil {
		return ConversationView{}, err
	}
	if err := s.requireOperator(ctx, p); err != nil {
		return ConversationView{}, err
	}
	var ws WorkspaceID
	if dir != "" || kind == KindOwner {
		var err error
		if ws, err = s.bindable(dir); err != nil {
			return ConversationView{}, err
		}
	}
	owner, gen := "", 0
	if kind == KindOwner {
		owner, gen = p.Name, p.Generation
	}
	if err := s.tx(ctx, func(tx *sql.Tx, _ *effects) error {
		return s.insertConversation(ctx, tx, id, kind, ws, owner, gen, "")
	}); err != nil {
		return ConversationView{}, err
	}
	s.log.Info("conversation created", "conversation", id, "kind", kind, "by", p.Name)
	return s.ShowConversation(ctx, p, id)
}

// ResetAs is conversations.reset: the operator or the device holding Take
// Control rotates the incarnation; the pending question is cancelled with
// its input_resolved event.
func (s *Store) ResetAs(ctx context.Context, p auth.Principal, id string) (ConversationView, error) {
	if err := checkString("conversation", id, MaxConversationLen, true); err != nil {
		return ConversationView{}, err
	}
	if err := s.opts.Authority.CanAnswer(ctx, p, id); err != nil {
		return ConversationView{}, err
	}
	c, err := s.Reset(ctx, id)
	if err != nil {
		return ConversationView{}, err
	}
	s.log.Info("conversation reset", "conversation", id, "by", p.Name, "incarnation", c.Incarnation)
	return s.view(ctx, c)
}

// TakeResult is conversations.take's answer.
type TakeResult struct {
	Conversation string     `json:"conversation"`
	Lease        auth.Lease `json:"lease"`
}

// Take is Take Control of an existing conversation for p (the operator or a
// control device): p becomes its active controller until the lease ends.
func (s *Store) Take(ctx context.Context, p auth.Principal, id string, ttl time.Duration) (TakeResult, error) {
	if err := checkString("conversation", id, MaxConversationLen, true); err != nil {
		return TakeResult{}, err
	}
	if s.opts.Leases == nil {
		return TakeResult{}, newErr(CodeUnavailable, "no_leases", "Take Control is not available here")
	}
	if _, err := s.Conversation(ctx, id); err != nil {
		return TakeResult{}, err
	}
	lease, err := s.opts.Leases.TakeControl(ctx, p, id, ttl)
	if err != nil {
		return TakeResult{}, authErr(err)
	}
	s.log.Info("control taken", "conversation", id, "holder", p.Name, "expires", lease.ExpiresAt, "replaced", lease.Replaced)
	return TakeResult{Conversation: id, Lease: lease}, nil
}

// ReleaseResult is conversations.release's answer.
type ReleaseResult struct {
	Conversation string `json:"conversation"`
	Released     bool   `json:"released"`
}

// ReleaseControl ends p's Take Control of id (the operator may end anyone's).
func (s *Store) ReleaseControl(ctx context.Context, p auth.Principal, id string) (ReleaseResult, error) {
	if err := checkString("conversation", id, MaxConversationLen, true); err != nil {
		return ReleaseResult{}, err
	}
	if s.opts.Leases == nil {
		return ReleaseResult{}, newErr(CodeUnavailable, "no_leases", "Take Control is not available here")
	}
	if _, err := s.Conversation(ctx, id); err != nil {
		return ReleaseResult{}, err
	}
	ok, err := s.opts.Leases.Release(ctx, p, id)
	if err != nil {
		return ReleaseResult{}, authErr(err)
	}
	return ReleaseResult{Conversation: id, Released: ok}, nil
}

// authErr turns auth refusals into this package's typed errors so every
// conversations.* method refuses in one vocabulary.
func authErr(err error) error {
	switch {
	case errors.Is(err, auth.ErrForbidden):
		// A captain, a read-only device or another holder's lease: taking
		// control would not help, so this is not "not_controller".
		return newErr(CodeForbidden, "may_not_control", "%v", err)
	case errors.Is(err, auth.ErrRevoked):
		return newErr(CodeForbidden, "revoked", "%v", err)
	case errors.Is(err, auth.ErrUnauthenticated):
		return newErr(CodeForbidden, "unauthenticated", "%v", err)
	case errors.Is(err, auth.ErrInvalid):
		return invalid("%v", err)
	case errors.Is(err, auth.ErrNotFound):
		return newErr(CodeNotFound, "", "%v", err)
	}
	return err
}
