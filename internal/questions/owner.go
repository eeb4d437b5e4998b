package questions

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Question statuses as seen in snapshots and receipts.
const (
	StatusNone      = "none"
	StatusPending   = "pending"
	StatusAnswered  = "answered"
	StatusCancelled = "cancelled"
	StatusExpired   = "expired"
)

// Reasons a question ended.
const (
	ReasonAnswered          = "answered"
	ReasonCancelled         = "cancelled" // explicit input_cancel
	ReasonExpired           = "expired"
	ReasonRestart           = "restart"
	ReasonReset             = "reset"
	ReasonOwnerRevoked      = "owner_revoked"
	ReasonCredentialRotated = "credential_rotated"
	ReasonOwnerChanged      = "owner_changed"
	ReasonWorkspaceReplaced = "workspace_replaced"
	ReasonWorkspaceChanged  = "workspace_changed"
	ReasonNativeTakeover    = "native_takeover"
	ReasonNativeOwner       = "native_owner"
)

// Continuation states of an accepted answer's run.
const (
	RunAccepted  = "accepted"  // answer and run ID committed
	RunSubmitted = "submitted" // the continuation turn was handed to the gateway
	RunFinished  = "finished"
	RunFailed    = "failed"
)

// Option is one choice of a question; its ID is opaque and immutable.
type Option struct {
	OptionID string `json:"option_id"`
	Label    string `json:"label"`
}

// NewQuestion is what the agent asks.
type NewQuestion struct {
	Question string
	Header   string
	// Options make it a choice question; none makes it a text question.
	Options []string
	// AllowText lets a choice question also take a free-text answer.
	AllowText bool
}

// OwnerAnswer is handed to the continuation.
type OwnerAnswer struct {
	RequestID string `json:"request_id"`
	Question  string `json:"question"`
	OptionID  string `json:"option_id,omitempty"`
	Label     string `json:"label,omitempty"`
	Text      string `json:"text,omitempty"`
	By        string `json:"by"`
}

// Content renders the answer as the continuation turn's message.
func (a OwnerAnswer) Content() string {
	if a.OptionID != "" {
		return fmt.Sprintf("The owner answered your question %q: %s", a.Question, a.Label)
	}
	return fmt.Sprintf("The owner answered your question %q: %s", a.Question, a.Text)
}

type questionRow struct {
	seq            int64
	requestID      string
	conv           string
	incarnation    string
	ws             WorkspaceID
	owner          string
	ownerGen       int
	kind           string
	header         string
	prompt         string
	options        []Option
	allowText      bool
	status         string
	createdAt      int64
	expiresAt      int64
	resolvedAt     int64
	reason         string
	receiptID      string
	answerOptionID string
	answerText     string
	resolvedBy     string
	runID          string
	runState       string
	runError       string
}

const questionSelect = `SELECT q.seq, q.request_id, q.conversation_id, q.incarnation, q.ws_path, q.ws_dev, q.ws_ino, q.ws_btime,
	q.owner, q.owner_generation, q.kind, q.header, q.prompt, q.options, q.allow_text, q.status,
	q.created_at, q.expires_at, q.resolved_at, q.reason, q.receipt_id, q.answer_option_id, q.answer_text, q.resolved_by,
	COALESCE(r.run_id, ''), COALESCE(r.state, ''), COALESCE(r.error, '')
	FROM questions q LEFT JOIN question_runs r ON r.request_id = q.request_id`

func scanQuestion(row interface{ Scan(...any) error }) (questionRow, error) {
	var q questionRow
	var dev, ino int64
	var opts string
	err := row.Scan(&q.seq, &q.requestID, &q.conv, &q.incarnation, &q.ws.Path, &dev, &ino, &q.ws.BirthNs,
		&q.owner, &q.ownerGen, &q.kind, &q.header, &q.prompt, &opts, &q.allowText, &q.status,
		&q.createdAt, &q.expiresAt, &q.resolvedAt, &q.reason, &q.receiptID, &q.answerOptionID, &q.answerText, &q.resolvedBy,
		&q.runID, &q.runState, &q.runError)
	if err != nil {
		return q, err
	}
	q.ws.Dev, q.ws.Ino = uint64(dev), uint64(ino)
	if err := json.Unmarshal([]byte(opts), &q.options); err != nil {
		return q, fmt.Errorf("questions: corrupt options of %s: %w", q.requestID, err)
	}
	return q, nil
}

func scanQuestions(rows *sql.Rows) ([]questionRow, error) {
	defer rows.Close()
	var out []questionRow
	for rows.Next() {
		q, err := scanQuestion(rows)
		if err != nil {
			return nil, fmt.Errorf("questions: scan: %w", err)
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

func pendingQuestion(ctx context.Context, tx *sql.Tx, conv string) (*questionRow, error) {
	q, err := scanQuestion(tx.QueryRowContext(ctx, questionSelect+` WHERE q.conversation_id = ? AND q.status = 'pending'`, conv))
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("questions: pending of %s: %w", conv, err)
	}
	return &q, nil
}

func questionByID(ctx context.Context, tx *sql.Tx, conv, requestID string) (questionRow, error) {
	q, err := scanQuestion(tx.QueryRowContext(ctx, questionSelect+` WHERE q.request_id = ? AND q.conversation_id = ?`, requestID, conv))
	if isNoRows(err) {
		return q, newErr(CodeNotFound, "", "no request %s on %s (unknown or no longer retained)", requestID, conv)
	}
	if err != nil {
		return q, fmt.Errorf("questions: load request %s: %w", requestID, err)
	}
	return q, nil
}

func latestQuestion(ctx context.Context, tx *sql.Tx, conv string) (*questionRow, error) {
	q, err := scanQuestion(tx.QueryRowContext(ctx, questionSelect+` WHERE q.conversation_id = ? ORDER BY q.seq DESC LIMIT 1`, conv))
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("questions: latest of %s: %w", conv, err)
	}
	return &q, nil
}

// eligible refuses conversations that cannot hold a question.
func (s *Store) eligible(ctx context.Context, c Conversation) error {
	switch {
	case c.Kind != KindOwner:
		return newErr(CodeUnavailable, "kind", "a %s conversation cannot hold a question", c.Kind)
	case c.NativeOwner != "":
		return newErr(CodeUnavailable, ReasonNativeOwner, "conversation %s has a native owner", c.ID)
	case c.Owner == "":
		return newErr(CodeUnavailable, "unauthenticated", "conversation %s has no authenticated owner", c.ID)
	case c.Workspace.IsZero():
		return newErr(CodeUnavailable, "no_workspace", "conversation %s works in no local directory", c.ID)
	}
	if err := c.Workspace.verifyWith(s.identify); err != nil {
		return newErr(CodeUnavailable, workspaceReason(err), "%v", err)
	}
	if reason, err := s.ownerStale(ctx, c.Owner, c.OwnerGeneration); err != nil {
		return err
	} else if reason != "" {
		return newErr(CodeUnavailable, reason, "owner credential %s is no longer valid", c.Owner)
	}
	return nil
}

// ownerStale reports owner_revoked / credential_rotated for the bound owner.
func (s *Store) ownerStale(ctx context.Context, owner string, gen int) (string, error) {
	cr := s.opts.Authority.Credentials
	if cr == nil {
		return "", nil
	}
	cur, active, err := cr.CredentialGeneration(ctx, owner)
	if err != nil {
		return "", fmt.Errorf("questions: check owner %s: %w", owner, err)
	}
	switch {
	case !active:
		return ReasonOwnerRevoked, nil
	case cur != gen:
		return ReasonCredentialRotated, nil
	}
	return "", nil
}

// workspaceReason names a failed workspace check: replaced when the
// directory is provably another one, changed when its identity cannot be
// known (no birth time, a failed check) and so must not be trusted.
func workspaceReason(err error) string {
	if errors.Is(err, ErrWorkspaceReplaced) {
		return ReasonWorkspaceReplaced
	}
	return ReasonWorkspaceChanged
}

// invalidation reports why a pending question can no longer be answered,
// checked on every use: expiry, reset, native ownership, owner credential,
// and the workspace directory's identity.
func (s *Store) invalidation(ctx context.Context, c Conversation, q questionRow) (status, reason string, err error) {
	switch {
	case c.Incarnation != q.incarnation:
		return StatusCancelled, ReasonReset, nil
	case c.NativeOwner != "":
		return StatusCancelled, ReasonNativeOwner, nil
	case c.Owner != q.owner || c.OwnerGeneration != q.ownerGen:
		return StatusCancelled, ReasonOwnerChanged, nil
	case c.Workspace != q.ws:
		return StatusCancelled, ReasonWorkspaceChanged, nil
	case s.now() >= q.expiresAt:
		return StatusExpired, ReasonExpired, nil
	}
	if err := q.ws.verifyWith(s.identify); err != nil {
		return StatusCancelled, workspaceReason(err), nil
	}
	reason, err = s.ownerStale(ctx, q.owner, q.ownerGen)
	if err != nil || reason == "" {
		return "", "", err
	}
	return StatusCancelled, reason, nil
}

// sweep invalidates q if it is pending but no longer valid. It returns the
// (possibly updated) row and whether it was invalidated now.
func (s *Store) sweep(ctx context.Context, tx *sql.Tx, fx *effects, c Conversation, q questionRow) (questionRow, bool, error) {
	if q.status != StatusPending {
		return q, false, nil
	}
	st, reason, err := s.invalidation(ctx, c, q)
	if err != nil || st == "" {
		return q, false, err
	}
	if _, err := s.terminate(ctx, tx, fx, q, st, reason, ""); err != nil {
		return q, false, err
	}
	fx.keep = true
	q, err = questionByID(ctx, tx, q.conv, q.requestID)
	return q, true, err
}

// terminate ends a pending question, bumps the revision, emits
// input_resolved and trims the receipt set. It returns the new revision.
func (s *Store) terminate(ctx context.Context, tx *sql.Tx, fx *effects, q questionRow, status, reason, by string) (int64, error) {
	res, err := tx.ExecContext(ctx, `UPDATE questions SET status = ?, reason = ?, resolved_at = ?, receipt_id = ?, resolved_by = ?
		WHERE request_id = ? AND status = 'pending'`, status, reason, s.now(), s.opts.NewID(), by, q.requestID)
	if err != nil {
		return 0, fmt.Errorf("questions: end %s: %w", q.requestID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return 0, fmt.Errorf("questions: end %s: not pending", q.requestID)
	}
	rev, err := s.bumpRevision(ctx, tx, q.conv)
	if err != nil {
		return 0, err
	}
	fx.emit(EventInputResolved, q.conv, InputResolvedEvent{
		Conversation: q.conv, RequestID: q.requestID, Incarnation: q.incarnation, Revision: rev, Status: status, Reason: reason,
	})
	s.log.Info("question ended", "conversation", q.conv, "request", q.requestID, "status", status, "reason", reason)
	return rev, s.trimReceipts(ctx, tx, q.conv)
}

func (s *Store) trimReceipts(ctx context.Context, tx *sql.Tx, conv string) error {
	_, err := tx.ExecContext(ctx, `DELETE FROM questions WHERE conversation_id = ? AND status != 'pending' AND seq NOT IN (
		SELECT seq FROM questions WHERE conversation_id = ? AND status != 'pending' ORDER BY seq DESC LIMIT ?)`, conv, conv, s.opts.KeepReceipts)
	if err != nil {
		return fmt.Errorf("questions: trim receipts of %s: %w", conv, err)
	}
	return nil
}

func validateNewQuestion(nq NewQuestion) (NewQuestion, error) {
	nq.Question = strings.TrimSpace(nq.Question)
	nq.Header = strings.TrimSpace(nq.Header)
	if err := checkString("question", nq.Question, MaxQuestionLen, true); err != nil {
		return nq, err
	}
	if err := checkString("header", nq.Header, MaxHeaderLen, false); err != nil {
		return nq, err
	}
	if len(nq.Options) > MaxOptions {
		return nq, invalid("at most %d options", MaxOptions)
	}
	seen := map[string]bool{}
	for i, o := range nq.Options {
		o = strings.TrimSpace(o)
		if err := checkString("options["+strconv.Itoa(i)+"]", o, MaxOptionLen, true); err != nil {
			return nq, err
		}
		if seen[strings.ToLower(o)] {
			return nq, invalid("duplicate option %q", o)
		}
		seen[strings.ToLower(o)] = true
		nq.Options[i] = o
	}
	if len(nq.Options) == 0 {
		nq.AllowText = true
	}
	return nq, nil
}

// Ask records a question on an owner conversation and returns its snapshot
// at once; the answer arrives later as an ANSWER-origin continuation turn.
func (s *Store) Ask(ctx context.Context, conv string, nq NewQuestion) (Snapshot, error) {
	nq, err := validateNewQuestion(nq)
	if err != nil {
		return Snapshot{}, err
	}
	var snap Snapshot
	err = s.tx(ctx, func(tx *sql.Tx, fx *effects) error {
		c, err := loadConversation(ctx, tx, conv)
		if err != nil {
			return err
		}
		if p, err := pendingQuestion(ctx, tx, conv); err != nil {
			return err
		} else if p != nil {
			q, invalidated, err := s.sweep(ctx, tx, fx, c, *p)
			if err != nil {
				return err
			}
			if !invalidated {
				return newErr(CodeConflict, "question_pending", "request %s is still pending on %s", q.requestID, conv)
			}
			if c, err = loadConversation(ctx, tx, conv); err != nil {
				return err
			}
		}
		if err := s.eligible(ctx, c); err != nil {
			return err
		}
		opts := make([]Option, len(nq.Options))
		for i, l := range nq.Options {
			opts[i] = Option{OptionID: s.opts.NewID(), Label: l}
		}
		optJSON, _ := json.Marshal(opts)
		kind := "text"
		if len(opts) > 0 {
			kind = "choice"
		}
		now := s.clk.Now()
		reqID := s.opts.NewID()
		_, err = tx.ExecContext(ctx, `INSERT INTO questions (request_id, conversation_id, incarnation, ws_path, ws_dev, ws_ino, ws_btime,
			owner, owner_generation, kind, header, prompt, options, allow_text, status, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
			reqID, conv, c.Incarnation, c.Workspace.Path, int64(c.Workspace.Dev), int64(c.Workspace.Ino), c.Workspace.BirthNs,
			c.Owner, c.OwnerGeneration, kind, nq.Header, nq.Question, string(optJSON), nq.AllowText,
			now.UnixNano(), now.Add(s.opts.QuestionTTL).UnixNano())
		if err != nil {
			return fmt.Errorf("questions: insert question on %s: %w", conv, err)
		}
		rev, err := s.bumpRevision(ctx, tx, conv)
		if err != nil {
			return err
		}
		evOpts := make([]EventOption, len(opts))
		for i, o := range opts {
			evOpts[i] = EventOption(o)
		}
		fx.emit(EventInputRequested, conv, InputRequestedEvent{
			Conversation: conv, RequestID: reqID, Incarnation: c.Incarnation, Revision: rev,
			Kind: kind, Question: nq.Question, Options: evOpts,
		})
		c.Revision = rev
		q, err := questionByID(ctx, tx, conv, reqID)
		if err != nil {
			return err
		}
		snap = buildSnapshot(c, &q)
		return nil
	})
	return snap, err
}

// Snapshot is the input_get result: everything a client needs to show and
// answer the question, independent of retained event history.
type Snapshot struct {
	Conversation string       `json:"conversation"`
	Incarnation  string       `json:"incarnation"`
	Revision     int64        `json:"revision"`
	Status       string       `json:"status"`
	Request      *RequestView `json:"request,omitempty"`
	Receipt      *Receipt     `json:"receipt,omitempty"`
}

// RequestView is the immutable part of a question.
type RequestView struct {
	RequestID string `json:"request_id"`
	// Incarnation the request is bound to.
	Incarnation string    `json:"incarnation"`
	Kind        string    `json:"kind"`
	Header      string    `json:"header,omitempty"`
	Question    string    `json:"question"`
	Options     []Option  `json:"options"`
	AllowText   bool      `json:"allow_text"`
	CreatedAt   time.Time `json:"created_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// Receipt is the terminal record of a question.
type Receipt struct {
	ReceiptID string    `json:"receipt_id"`
	RequestID string    `json:"request_id"`
	Status    string    `json:"status"`
	Reason    string    `json:"reason,omitempty"`
	OptionID  string    `json:"option_id,omitempty"`
	Text      string    `json:"text,omitempty"`
	By        string    `json:"by,omitempty"`
	At        time.Time `json:"at"`
	// RunID and Continuation are set for an accepted answer. Accepted means
	// stored, not executed.
	RunID             string `json:"run_id,omitempty"`
	Continuation      string `json:"continuation,omitempty"`
	ContinuationError string `json:"continuation_error,omitempty"`
	// Duplicate is set when this call repeated an earlier identical answer.
	Duplicate bool `json:"duplicate,omitempty"`
}

func buildSnapshot(c Conversation, q *questionRow) Snapshot {
	s := Snapshot{Conversation: c.ID, Incarnation: c.Incarnation, Revision: c.Revision, Status: StatusNone}
	if q == nil {
		return s
	}
	s.Status = q.status
	opts := q.options
	if opts == nil {
		opts = []Option{}
	}
	s.Request = &RequestView{
		RequestID: q.requestID, Incarnation: q.incarnation, Kind: q.kind, Header: q.header, Question: q.prompt,
		Options: opts, AllowText: q.allowText, CreatedAt: fromNanos(q.createdAt), ExpiresAt: fromNanos(q.expiresAt),
	}
	if q.status != StatusPending {
		r := q.receipt()
		s.Receipt = &r
	}
	return s
}

func (q questionRow) receipt() Receipt {
	return Receipt{
		ReceiptID: q.receiptID, RequestID: q.requestID, Status: q.status, Reason: q.reason,
		OptionID: q.answerOptionID, Text: q.answerText, By: q.resolvedBy, At: fromNanos(q.resolvedAt),
		RunID: q.runID, Continuation: q.runState, ContinuationError: q.runError,
	}
}

func (q questionRow) option(id string) (Option, bool) {
	for _, o := range q.options {
		if o.OptionID == id {
			return o, true
		}
	}
	return Option{}, false
}
