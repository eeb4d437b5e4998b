package questions

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/raven-agent/raven/internal/auth"
)

// GetParams is the strict input_get DTO.
type GetParams struct {
	Conversation string `json:"conversation"`
	// RequestID selects a retained request; empty means the pending one,
	// or else the latest retained.
	RequestID string `json:"request_id,omitempty"`
}

// AnswerParams is the strict input_answer DTO. It binds to the displayed
// request, incarnation and revision; exactly one of OptionID and Text.
type AnswerParams struct {
	Conversation string `json:"conversation"`
	RequestID    string `json:"request_id"`
	Incarnation  string `json:"incarnation"`
	Revision     int64  `json:"revision"`
	OptionID     string `json:"option_id,omitempty"`
	Text         string `json:"text,omitempty"`
}

// CancelParams is the strict input_cancel DTO.
type CancelParams struct {
	Conversation string `json:"conversation"`
	RequestID    string `json:"request_id"`
	Incarnation  string `json:"incarnation"`
	Revision     int64  `json:"revision"`
}

func (p GetParams) validate() error {
	if err := checkString("conversation", p.Conversation, MaxConversationLen, true); err != nil {
		return err
	}
	if p.RequestID != "" {
		return checkUUID("request_id", p.RequestID)
	}
	return nil
}

func validateBinding(conv, req, inc string, rev int64) error {
	if err := checkString("conversation", conv, MaxConversationLen, true); err != nil {
		return err
	}
	if err := checkUUID("request_id", req); err != nil {
		return err
	}
	if err := checkUUID("incarnation", inc); err != nil {
		return err
	}
	if rev < 1 {
		return invalid("revision must be a positive integer")
	}
	return nil
}

func (p *AnswerParams) validate() error {
	if err := validateBinding(p.Conversation, p.RequestID, p.Incarnation, p.Revision); err != nil {
		return err
	}
	p.Text = strings.TrimSpace(p.Text)
	switch {
	case p.OptionID != "" && p.Text != "":
		return invalid("give option_id or text, not both")
	case p.OptionID != "":
		return checkUUID("option_id", p.OptionID)
	case p.Text != "":
		return checkString("text", p.Text, MaxAnswerTextLen, true)
	}
	return invalid("option_id or text is required")
}

func (p CancelParams) validate() error {
	return validateBinding(p.Conversation, p.RequestID, p.Incarnation, p.Revision)
}

// Get returns the question snapshot. A pending question that became invalid
// (expired, workspace replaced, owner credential rotated, …) is ended first,
// so a displayed idle question is never taken as still answerable.
func (s *Store) Get(ctx context.Context, p auth.Principal, in GetParams) (Snapshot, error) {
	if err := in.validate(); err != nil {
		return Snapshot{}, err
	}
	if err := s.opts.Authority.CanRead(ctx, p); err != nil {
		return Snapshot{}, err
	}
	var snap Snapshot
	err := s.tx(ctx, func(tx *sql.Tx, fx *effects) error {
		c, err := loadConversation(ctx, tx, in.Conversation)
		if err != nil {
			return err
		}
		var q *questionRow
		if in.RequestID != "" {
			row, err := questionByID(ctx, tx, in.Conversation, in.RequestID)
			if err != nil {
				return err
			}
			q = &row
		} else if q, err = pendingQuestion(ctx, tx, in.Conversation); err != nil {
			return err
		} else if q == nil {
			if q, err = latestQuestion(ctx, tx, in.Conversation); err != nil {
				return err
			}
		}
		if q != nil && q.status == StatusPending && !s.readOnly {
			row, swept, err := s.sweep(ctx, tx, fx, c, *q)
			if err != nil {
				return err
			}
			if swept {
				q = &row
				if c, err = loadConversation(ctx, tx, in.Conversation); err != nil {
					return err
				}
			}
		}
		snap = buildSnapshot(c, q)
		return nil
	})
	return snap, err
}

// Answer accepts an answer: the answer and its continuation run ID are
// committed in one transaction, then the continuation is submitted. The
// same answer again returns the original receipt (even after the revision
// moved); a different answer to a consumed request is a conflict.
func (s *Store) Answer(ctx context.Context, p auth.Principal, in AnswerParams) (Receipt, error) {
	if err := in.validate(); err != nil {
		return Receipt{}, err
	}
	if err := s.opts.Authority.CanAnswer(ctx, p, in.Conversation); err != nil {
		return Receipt{}, err
	}
	var (
		rec    Receipt
		cont   *OwnerAnswer
		runID  string
		review questionRow
	)
	err := s.tx(ctx, func(tx *sql.Tx, fx *effects) error {
		c, q, err := s.bound(ctx, tx, fx, in.Conversation, in.RequestID, in.Incarnation)
		if err != nil {
			return err
		}
		switch q.status {
		case StatusAnswered:
			if q.answerOptionID == in.OptionID && q.answerText == in.Text {
				rec = q.receipt()
				rec.Duplicate = true
				return nil
			}
			return newErr(CodeConflict, "already_answered", "request %s was already answered differently", q.requestID)
		case StatusPending:
		default:
			return endedErr(q)
		}
		if c.Revision != in.Revision {
			return newErr(CodeConflict, "revision_mismatch", "conversation %s is at revision %d, not %d: read the question again", c.ID, c.Revision, in.Revision)
		}
		ans := OwnerAnswer{RequestID: q.requestID, Question: q.prompt, By: p.Name}
		if in.OptionID != "" {
			o, ok := q.option(in.OptionID)
			if !ok {
				return invalid("option %s is not an option of request %s", in.OptionID, q.requestID)
			}
			ans.OptionID, ans.Label = o.OptionID, o.Label
		} else {
			if !q.allowText {
				return invalid("request %s takes one of its options, not text", q.requestID)
			}
			ans.Text = in.Text
		}
		now := s.now()
		if _, err := tx.ExecContext(ctx, `UPDATE questions SET status = 'answered', reason = ?, resolved_at = ?, receipt_id = ?, resolved_by = ?,
			answer_option_id = ?, answer_text = ? WHERE request_id = ? AND status = 'pending'`,
			ReasonAnswered, now, s.opts.NewID(), p.Name, in.OptionID, in.Text, q.requestID); err != nil {
			return fmt.Errorf("questions: store answer %s: %w", q.requestID, err)
		}
		if s.afterAnswerWrite != nil {
			if err := s.afterAnswerWrite(); err != nil {
				return err
			}
		}
		runID = s.opts.NewID()
		if _, err := tx.ExecContext(ctx, `INSERT INTO question_runs (run_id, request_id, state, created_at, updated_at) VALUES (?, ?, 'accepted', ?, ?)`,
			runID, q.requestID, now, now); err != nil {
			return fmt.Errorf("questions: store run %s: %w", q.requestID, err)
		}
		rev, err := s.bumpRevision(ctx, tx, c.ID)
		if err != nil {
			return err
		}
		fx.emit(EventInputResolved, c.ID, InputResolvedEvent{
			Conversation: c.ID, RequestID: q.requestID, Incarnation: q.incarnation, Revision: rev,
			Status: StatusAnswered, Reason: ReasonAnswered, RunID: runID,
		})
		if review, err = questionByID(ctx, tx, c.ID, q.requestID); err != nil {
			return err
		}
		rec = review.receipt()
		cont = &ans
		return s.trimReceipts(ctx, tx, c.ID)
	})
	if err != nil || cont == nil {
		return rec, err
	}
	s.log.Info("question answered", "conversation", in.Conversation, "request", in.RequestID, "run", runID, "by", p.Name)
	if s.opts.Continue == nil {
		return rec, nil
	}
	// The client may be gone; the submission must not be half-done.
	cctx := context.WithoutCancel(ctx)
	// The run is marked submitted before Continue: a fast continuation can
	// reach FinishRun before Continue returns, and marking afterwards would
	// then find no open run and leave the receipt short of its final state.
	if s.beforeContinue != nil {
		s.beforeContinue()
	}
	started, err := s.startRun(cctx, in.Conversation, runID)
	if err != nil {
		s.log.Error("questions: record continuation submission", "run", runID, "err", err)
		return rec, nil
	}
	if !started {
		s.log.Warn("question continuation not started: the conversation was taken over first", "run", runID)
	} else if cerr := s.opts.Continue(cctx, in.Conversation, runID, *cont); cerr != nil {
		s.log.Warn("question continuation failed; answer stays accepted, not resubmitted", "run", runID, "err", cerr)
		if err := s.setRun(cctx, runID, RunFailed, cerr.Error(), RunSubmitted); err != nil && CodeOf(err) != CodeNotFound {
			s.log.Error("questions: record continuation failure", "run", runID, "err", err)
		}
	}
	state, msg, err := s.runState(cctx, runID)
	if err != nil {
		s.log.Error("questions: read continuation state", "run", runID, "err", err)
		return rec, nil
	}
	rec.Continuation, rec.ContinuationError = state, msg
	return rec, nil
}

// Cancel ends the pending question explicitly. Cancelling an already
// cancelled request returns its receipt.
func (s *Store) Cancel(ctx context.Context, p auth.Principal, in CancelParams) (Receipt, error) {
	if err := in.validate(); err != nil {
		return Receipt{}, err
	}
	if err := s.opts.Authority.CanAnswer(ctx, p, in.Conversation); err != nil {
		return Receipt{}, err
	}
	var rec Receipt
	err := s.tx(ctx, func(tx *sql.Tx, fx *effects) error {
		c, q, err := s.bound(ctx, tx, fx, in.Conversation, in.RequestID, in.Incarnation)
		if err != nil {
			return err
		}
		if q.status == StatusCancelled && q.reason == ReasonCancelled {
			rec = q.receipt()
			rec.Duplicate = true
			return nil
		}
		if q.status != StatusPending {
			return endedErr(q)
		}
		if c.Revision != in.Revision {
			return newErr(CodeConflict, "revision_mismatch", "conversation %s is at revision %d, not %d: read the question again", c.ID, c.Revision, in.Revision)
		}
		if _, err := s.terminate(ctx, tx, fx, q, StatusCancelled, ReasonCancelled, p.Name); err != nil {
			return err
		}
		q, err = questionByID(ctx, tx, c.ID, q.requestID)
		rec = q.receipt()
		return err
	})
	return rec, err
}

// bound loads the conversation and the named request, checks the displayed
// incarnation, and ends the request first if it became invalid.
func (s *Store) bound(ctx context.Context, tx *sql.Tx, fx *effects, conv, reqID, inc string) (Conversation, questionRow, error) {
	c, err := loadConversation(ctx, tx, conv)
	if err != nil {
		return c, questionRow{}, err
	}
	q, err := questionByID(ctx, tx, conv, reqID)
	if err != nil {
		return c, q, err
	}
	if q.incarnation != inc {
		return c, q, newErr(CodeConflict, "incarnation_mismatch", "request %s belongs to another incarnation: read the question again", reqID)
	}
	q, swept, err := s.sweep(ctx, tx, fx, c, q)
	if err != nil {
		return c, q, err
	}
	if swept {
		return c, q, endedErr(q)
	}
	return c, q, nil
}

func endedErr(q questionRow) error {
	switch q.status {
	case StatusExpired:
		return newErr(CodeExpired, ReasonExpired, "request %s expired", q.requestID)
	case StatusAnswered:
		return newErr(CodeConflict, "already_answered", "request %s was already answered", q.requestID)
	}
	return newErr(CodeConflict, "question_"+q.status, "request %s was %s (%s)", q.requestID, q.status, q.reason)
}
