package questions

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/auth"
)

// Kind is a conversation kind. Only owner conversations can hold a question.
type Kind string

const (
	KindOwner  Kind = "owner"
	KindNative Kind = "native" // a native-seat conversation
	KindRoom   Kind = "room"
	KindGlobal Kind = "global"
	KindSide   Kind = "side"
)

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool {
	switch k {
	case KindOwner, KindNative, KindRoom, KindGlobal, KindSide:
		return true
	}
	return false
}

// Conversation is the durable identity a question binds to.
type Conversation struct {
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// Incarnation is rotated by Reset; a question of an older incarnation
	// can never be answered.
	Incarnation string `json:"incarnation"`
	// Revision increases on every change that affects questions.
	Revision  int64       `json:"revision"`
	Workspace WorkspaceID `json:"workspace"`
	// NativeOwner, when set, excludes questions even while it is offline.
	NativeOwner string `json:"native_owner,omitempty"`
	// Owner is the authenticated owner credential the conversation runs for.
	Owner           string    `json:"owner,omitempty"`
	OwnerGeneration int       `json:"owner_generation,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// ConversationSpec creates a conversation.
type ConversationSpec struct {
	ID   string
	Kind Kind
	// Workspace is the local directory the conversation works in ("" none).
	Workspace       string
	Owner           string
	OwnerGeneration int
	NativeOwner     string
}

const convColumns = `id, kind, incarnation, revision, ws_path, ws_dev, ws_ino, ws_btime, native_owner, owner, owner_generation, created_at, updated_at`

func scanConversation(row interface{ Scan(...any) error }) (Conversation, error) {
	var c Conversation
	var dev, ino, created, updated int64
	err := row.Scan(&c.ID, &c.Kind, &c.Incarnation, &c.Revision, &c.Workspace.Path, &dev, &ino, &c.Workspace.BirthNs,
		&c.NativeOwner, &c.Owner, &c.OwnerGeneration, &created, &updated)
	c.Workspace.Dev, c.Workspace.Ino = uint64(dev), uint64(ino)
	c.CreatedAt, c.UpdatedAt = fromNanos(created), fromNanos(updated)
	return c, err
}

func loadConversation(ctx context.Context, tx *sql.Tx, id string) (Conversation, error) {
	c, err := scanConversation(tx.QueryRowContext(ctx, `SELECT `+convColumns+` FROM conversations WHERE id = ?`, id))
	if isNoRows(err) {
		return c, newErr(CodeNotFound, "", "no conversation %q", id)
	}
	if err != nil {
		return c, fmt.Errorf("questions: load conversation %s: %w", id, err)
	}
	return c, nil
}

// bumpRevision increments the conversation's revision and returns it.
func (s *Store) bumpRevision(ctx context.Context, tx *sql.Tx, id string) (int64, error) {
	var rev int64
	err := tx.QueryRowContext(ctx, `UPDATE conversations SET revision = revision + 1, updated_at = ? WHERE id = ? RETURNING revision`, s.now(), id).Scan(&rev)
	if err != nil {
		return 0, fmt.Errorf("questions: bump revision of %s: %w", id, err)
	}
	return rev, nil
}

// CreateConversation records a new conversation with a fresh incarnation.
func (s *Store) CreateConversation(ctx context.Context, spec ConversationSpec) (Conversation, error) {
	if err := checkString("id", spec.ID, MaxConversationLen, true); err != nil {
		return Conversation{}, err
	}
	if !spec.Kind.Valid() {
		return Conversation{}, invalid("unknown conversation kind %q", spec.Kind)
	}
	var ws WorkspaceID
	if spec.Workspace != "" {
		var err error
		if ws, err = s.identify(spec.Workspace); err != nil {
			return Conversation{}, invalid("%v", err)
		}
	}
	var out Conversation
	err := s.tx(ctx, func(tx *sql.Tx, _ *effects) error {
		now := s.now()
		_, err := tx.ExecContext(ctx, `INSERT INTO conversations (`+convColumns+`) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			spec.ID, spec.Kind, s.opts.NewID(), ws.Path, int64(ws.Dev), int64(ws.Ino), ws.BirthNs, spec.NativeOwner, spec.Owner, spec.OwnerGeneration, now, now)
		if err != nil {
			if strings.Contains(err.Error(), "UNIQUE") {
				return newErr(CodeConflict, "exists", "conversation %q already exists", spec.ID)
			}
			return fmt.Errorf("questions: create conversation %s: %w", spec.ID, err)
		}
		out, err = loadConversation(ctx, tx, spec.ID)
		return err
	})
	return out, err
}

// Conversation returns the conversation id.
func (s *Store) Conversation(ctx context.Context, id string) (Conversation, error) {
	c, err := scanConversation(s.db.QueryRowContext(ctx, `SELECT `+convColumns+` FROM conversations WHERE id = ?`, id))
	if isNoRows(err) {
		return c, newErr(CodeNotFound, "", "no conversation %q", id)
	}
	if err != nil {
		return c, fmt.Errorf("questions: get conversation %s: %w", id, err)
	}
	return c, nil
}

// Reset rotates the conversation's incarnation and cancels its pending
// question (reason "reset").
func (s *Store) Reset(ctx context.Context, id string) (Conversation, error) {
	return s.mutateConversation(ctx, id, ReasonReset, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE conversations SET incarnation = ? WHERE id = ?`, s.opts.NewID(), id)
		return err
	})
}

// SetNativeOwner persists (or, with "", clears) the conversation's native
// owner. While set, the conversation cannot hold a question.
func (s *Store) SetNativeOwner(ctx context.Context, id, owner string) (Conversation, error) {
	if err := checkString("native_owner", owner, MaxConversationLen, false); err != nil {
		return Conversation{}, err
	}
	return s.mutateConversation(ctx, id, ReasonNativeOwner, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE conversations SET native_owner = ? WHERE id = ?`, owner, id)
		return err
	})
}

// NativeTakeover records that a native seat took the conversation over: it
// becomes the native owner and the pending question is cancelled before any
// answer continuation can start.
func (s *Store) NativeTakeover(ctx context.Context, id, owner string) (Conversation, error) {
	if err := checkString("native_owner", owner, MaxConversationLen, true); err != nil {
		return Conversation{}, err
	}
	return s.mutateConversation(ctx, id, ReasonNativeTakeover, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE conversations SET native_owner = ? WHERE id = ?`, owner, id); err != nil {
			return err
		}
		_, err := s.stopUnstartedRuns(ctx, tx, id, "native takeover before the continuation started")
		return err
	})
}

// SetWorkspace rebinds the conversation to dir ("" unbinds), cancelling a
// pending question bound to the old directory.
func (s *Store) SetWorkspace(ctx context.Context, id, dir string) (Conversation, error) {
	var ws WorkspaceID
	if dir != "" {
		var err error
		if ws, err = s.identify(dir); err != nil {
			return Conversation{}, invalid("%v", err)
		}
	}
	return s.mutateConversation(ctx, id, ReasonWorkspaceChanged, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE conversations SET ws_path = ?, ws_dev = ?, ws_ino = ?, ws_btime = ? WHERE id = ?`, ws.Path, int64(ws.Dev), int64(ws.Ino), ws.BirthNs, id)
		return err
	})
}

// BindOwner records the authenticated owner credential of the conversation.
func (s *Store) BindOwner(ctx context.Context, id, owner string, generation int) (Conversation, error) {
	if err := checkString("owner", owner, MaxConversationLen, false); err != nil {
		return Conversation{}, err
	}
	return s.mutateConversation(ctx, id, ReasonOwnerChanged, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE conversations SET owner = ?, owner_generation = ? WHERE id = ?`, owner, generation, id)
		return err
	})
}

// CredentialChanged is the auth.CredentialHook the runtime registers with
// auth.Store.OnCredentialChange: a revoked or rotated owner credential
// cancels its pending questions at once, each with its input_resolved
// event, instead of on the next read.
func (s *Store) CredentialChanged(ctx context.Context, name string, change auth.CredentialChange) {
	reason := ReasonOwnerRevoked
	if change == auth.CredentialRotated {
		reason = ReasonCredentialRotated
	}
	n, err := s.ownerInvalidated(ctx, name, reason)
	if err != nil {
		s.log.Error("questions: cancel questions of a changed credential", "credential", name, "change", change, "err", err)
		return
	}
	if n > 0 {
		s.log.Info("questions cancelled: owner credential changed", "credential", name, "change", change, "cancelled", n)
	}
}

// OwnerRevoked cancels the pending questions of every conversation owned by
// the credential name (reason "owner_revoked").
func (s *Store) OwnerRevoked(ctx context.Context, name string) (int, error) {
	return s.ownerInvalidated(ctx, name, ReasonOwnerRevoked)
}

func (s *Store) ownerInvalidated(ctx context.Context, name, reason string) (int, error) {
	n := 0
	err := s.tx(ctx, func(tx *sql.Tx, fx *effects) error {
		rows, err := tx.QueryContext(ctx, questionSelect+` WHERE q.status = 'pending' AND q.owner = ?`, name)
		if err != nil {
			return fmt.Errorf("questions: owner revoked %s: %w", name, err)
		}
		qs, err := scanQuestions(rows)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if _, err := s.terminate(ctx, tx, fx, q, StatusCancelled, reason, ""); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// mutateConversation applies change, cancels the pending question with
// reason, and bumps the revision, all in one transaction.
func (s *Store) mutateConversation(ctx context.Context, id, reason string, change func(*sql.Tx) error) (Conversation, error) {
	var out Conversation
	err := s.tx(ctx, func(tx *sql.Tx, fx *effects) error {
		if _, err := loadConversation(ctx, tx, id); err != nil {
			return err
		}
		if err := change(tx); err != nil {
			return fmt.Errorf("questions: update conversation %s: %w", id, err)
		}
		q, err := pendingQuestion(ctx, tx, id)
		if err != nil {
			return err
		}
		if q != nil {
			if _, err := s.terminate(ctx, tx, fx, *q, StatusCancelled, reason, ""); err != nil {
				return err
			}
		} else if _, err := s.bumpRevision(ctx, tx, id); err != nil {
			return err
		}
		out, err = loadConversation(ctx, tx, id)
		return err
	})
	return out, err
}
