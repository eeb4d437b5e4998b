package questions

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// RecoverReport says what Recover did.
type RecoverReport struct {
	Cancelled  int `json:"cancelled"`
	FailedRuns int `json:"failed_runs"`
}

// Recover runs once at gateway start: every pending question is cancelled
// (reason "restart") and every accepted continuation without a finished run
// is marked failed. Nothing is re-executed or resubmitted.
func (s *Store) Recover(ctx context.Context) (RecoverReport, error) {
	var rep RecoverReport
	err := s.tx(ctx, func(tx *sql.Tx, fx *effects) error {
		rows, err := tx.QueryContext(ctx, questionSelect+` WHERE q.status = 'pending'`)
		if err != nil {
			return fmt.Errorf("questions: recover: %w", err)
		}
		qs, err := scanQuestions(rows)
		if err != nil {
			return err
		}
		for _, q := range qs {
			if _, err := s.terminate(ctx, tx, fx, q, StatusCancelled, ReasonRestart, ""); err != nil {
				return err
			}
			rep.Cancelled++
		}
		res, err := tx.ExecContext(ctx, `UPDATE question_runs SET state = 'failed', error = ?, updated_at = ? WHERE state IN ('accepted', 'submitted')`,
			"interrupted by restart; not resubmitted", s.now())
		if err != nil {
			return fmt.Errorf("questions: recover runs: %w", err)
		}
		n, _ := res.RowsAffected()
		rep.FailedRuns = int(n)
		return nil
	})
	if err == nil && (rep.Cancelled > 0 || rep.FailedRuns > 0) {
		s.log.Info("questions recovered after restart", "cancelled", rep.Cancelled, "failed_runs", rep.FailedRuns)
	}
	return rep, err
}

// FinishRun records the end of a continuation run (runErr nil: finished).
// The gateway calls it when the ANSWER-origin turn completes.
func (s *Store) FinishRun(ctx context.Context, runID string, runErr error) error {
	state, msg := RunFinished, ""
	if runErr != nil {
		state, msg = RunFailed, runErr.Error()
	}
	return s.setRun(ctx, runID, state, msg, RunAccepted, RunSubmitted)
}

// setRun moves a run to state, only from one of the from states.
func (s *Store) setRun(ctx context.Context, runID, state, msg string, from ...string) error {
	if len(msg) > MaxAnswerTextLen {
		msg = msg[:MaxAnswerTextLen]
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(from)), ",")
	args := []any{state, msg, s.now(), runID}
	for _, f := range from {
		args = append(args, f)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE question_runs SET state = ?, error = ?, updated_at = ? WHERE run_id = ? AND state IN (`+ph+`)`, args...)
	if err != nil {
		return fmt.Errorf("questions: run %s -> %s: %w", runID, state, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return newErr(CodeNotFound, "", "no open run %s", runID)
	}
	return nil
}

// runState reads a run's current state and error message.
func (s *Store) runState(ctx context.Context, runID string) (state, msg string, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT state, error FROM question_runs WHERE run_id = ?`, runID).Scan(&state, &msg)
	if err != nil {
		return "", "", fmt.Errorf("questions: read run %s: %w", runID, err)
	}
	return state, msg, nil
}
