package questions

import (
	"context"
	"database/sql"
	"fmt"
)

// The native seat is the local REPL attached to a conversation with
// `raven chat --native CONV`: while it owns the conversation (persisted as
// native_owner, even when the REPL is not running) no question can be held
// there, and claiming it cancels a pending question and stops an accepted
// answer's continuation that has not started yet.

// NativeResult is conversations.native's answer.
type NativeResult struct {
	ConversationView
	// Previous is the seat this claim displaced ("" none).
	Previous string `json:"previous,omitempty"`
	// StoppedRuns counts accepted continuations that had not started and
	// were failed by the takeover.
	StoppedRuns int `json:"stopped_runs,omitempty"`
}

// ClaimNative makes seat the native owner of conv, creating conv as a
// native conversation when it does not exist. In one transaction it cancels
// the pending question (reason native_takeover) and fails every accepted
// continuation of conv that was not yet handed to the runtime: an answer
// accepted just before the takeover never starts a turn after it.
func (s *Store) ClaimNative(ctx context.Context, conv, seat string) (NativeResult, error) {
	if err := checkString("conversation", conv, MaxConversationLen, true); err != nil {
		return NativeResult{}, err
	}
	if err := checkString("seat", seat, MaxConversationLen, true); err != nil {
		return NativeResult{}, err
	}
	var res NativeResult
	err := s.tx(ctx, func(tx *sql.Tx, fx *effects) error {
		c, err := loadConversation(ctx, tx, conv)
		if CodeOf(err) == CodeNotFound {
			return s.insertConversation(ctx, tx, conv, KindNative, WorkspaceID{}, "", 0, seat)
		}
		if err != nil {
			return err
		}
		if c.NativeOwner != seat {
			res.Previous = c.NativeOwner
		}
		if _, err := tx.ExecContext(ctx, `UPDATE conversations SET native_owner = ? WHERE id = ?`, seat, conv); err != nil {
			return fmt.Errorf("questions: native owner of %s: %w", conv, err)
		}
		n, err := s.stopUnstartedRuns(ctx, tx, conv, "native takeover before the continuation started")
		if err != nil {
			return err
		}
		res.StoppedRuns = n
		return s.cancelPendingOrBump(ctx, tx, fx, conv, ReasonNativeTakeover)
	})
	if err != nil {
		return NativeResult{}, err
	}
	s.log.Info("native seat claimed", "conversation", conv, "seat", seat, "previous", res.Previous, "stopped_runs", res.StoppedRuns)
	c, err := s.Conversation(ctx, conv)
	if err != nil {
		return NativeResult{}, err
	}
	res.ConversationView, err = s.view(ctx, c)
	return res, err
}

// ReleaseNative ends seat's native ownership of conv. Another seat's claim
// is a conflict: the REPL that was displaced must not free the newer one.
func (s *Store) ReleaseNative(ctx context.Context, conv, seat string) (ConversationView, error) {
	if err := checkString("conversation", conv, MaxConversationLen, true); err != nil {
		return ConversationView{}, err
	}
	if err := checkString("seat", seat, MaxConversationLen, true); err != nil {
		return ConversationView{}, err
	}
	err := s.tx(ctx, func(tx *sql.Tx, fx *effects) error {
		c, err := loadConversation(ctx, tx, conv)
		if err != nil {
			return err
		}
		if c.NativeOwner != seat {
			return newErr(CodeConflict, "not_native_owner", "seat %q does not own %s (native owner %q)", seat, conv, c.NativeOwner)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE conversations SET native_owner = '' WHERE id = ?`, conv); err != nil {
			return fmt.Errorf("questions: release native owner of %s: %w", conv, err)
		}
		return s.cancelPendingOrBump(ctx, tx, fx, conv, ReasonNativeOwner)
	})
	if err != nil {
		return ConversationView{}, err
	}
	s.log.Info("native seat released", "conversation", conv, "seat", seat)
	c, err := s.Conversation(ctx, conv)
	if err != nil {
		return ConversationView{}, err
	}
	return s.view(ctx, c)
}

func (s *Store) stopUnstartedRuns(ctx context.Context, tx *sql.Tx, conv, why string) (int, error) {
	res, err := tx.ExecContext(ctx, `UPDATE question_runs SET state = 'failed', error = ?, updated_at = ?
		WHERE state = 'accepted' AND request_id IN (SELECT request_id FROM questions WHERE conversation_id = ?)`, why, s.now(), conv)
	if err != nil {
		return 0, fmt.Errorf("questions: stop runs of %s: %w", conv, err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// startRun moves an accepted run to submitted unless its conversation has
// been taken by a native seat meanwhile; ok reports whether the
// continuation may be handed to the runtime. Serialised with ClaimNative by
// the write lock, so exactly one of them wins.
func (s *Store) startRun(ctx context.Context, conv, runID string) (ok bool, err error) {
	err = s.tx(ctx, func(tx *sql.Tx, _ *effects) error {
		var native string
		if err := tx.QueryRowContext(ctx, `SELECT native_owner FROM conversations WHERE id = ?`, conv).Scan(&native); err != nil {
			return fmt.Errorf("questions: start run %s: %w", runID, err)
		}
		if native != "" {
			_, err := tx.ExecContext(ctx, `UPDATE question_runs SET state = 'failed', error = ?, updated_at = ? WHERE run_id = ? AND state = 'accepted'`,
				"native takeover before the continuation started", s.now(), runID)
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE question_runs SET state = 'submitted', updated_at = ? WHERE run_id = ? AND state = 'accepted'`, s.now(), runID)
		if err != nil {
			return fmt.Errorf("questions: start run %s: %w", runID, err)
		}
		n, _ := res.RowsAffected()
		ok = n == 1
		return nil
	})
	return ok, err
}

// BeginRun is asked when a submitted continuation's turn is about to
// execute. The scheduler may have queued it behind another turn of the
// conversation, and a native takeover meanwhile must still come first:
// the continuation is then refused (the caller records the run failed
// with this error) instead of run.
func (s *Store) BeginRun(ctx context.Context, conv, runID string) error {
	var native string
	if err := s.db.QueryRowContext(ctx, `SELECT native_owner FROM conversations WHERE id = ?`, conv).Scan(&native); err != nil {
		return fmt.Errorf("questions: begin run %s: %w", runID, err)
	}
	if native != "" {
		s.log.Warn("question continuation not run: the conversation was taken over while it waited for its turn", "run", runID, "conversation", conv)
		return newErr(CodeUnavailable, ReasonNativeTakeover, "native takeover before the continuation started")
	}
	return nil
}
