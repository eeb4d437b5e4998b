package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/chat"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/eventlog"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// localOperator is the principal of direct database reads by the local
// operator, used only when no gateway runs on the data dir.
var localOperator = auth.Principal{Name: "local", Role: auth.RoleOperator}

// Exit codes of every `raven conversations` command (documented in --help).
const (
	exitRefused     = 1 // refused: not found, unavailable, no gateway for a write
	exitUsage       = 2 // bad arguments, a missing required flag, invalid params
	exitConflict    = 3 // the state moved on: read again (revision, consumed, expired)
	exitNotAllowed  = 4 // not authorised: not the controller, read-only, captain, bad token
	conversationsEx = `Exit codes: 0 ok · 1 refused (not found, unavailable, no gateway for a write) ·
2 usage (bad arguments, missing required flag) · 3 conflict (read again) · 4 not authorised
(take control first, or a read-only/captain/revoked credential).`
)

// questionOps are the dispatcher operations the CLI calls. A running
// gateway serves them over the control API (the principal is then the
// token file's); without one only reads run, on the database directly.
type questionOps interface {
	InputGet(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
	InputAnswer(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
	InputCancel(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
	ConversationsList(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
	ConversationsShow(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
	ConversationsNew(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
	ConversationsReset(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
	ConversationsTake(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
	ConversationsRelease(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
}

// convFlags are the flags the conversations commands share.
type convFlags struct {
	tokenFile string
}

func newConversationsCmd(g *globals) *cobra.Command {
	cf := &convFlags{}
	cmd := &cobra.Command{
		Use:   "conversations",
		Short: "Owner conversations: list, show, new, reset, Take Control; read, answer or cancel their questions",
		Long: "Owner conversations and their durable questions, through the running gateway's control API.\n" +
			"Reads (list, show, questions) also work on the database when no gateway runs, and never create\n" +
			"a data dir; writes need the gateway (an answer's continuation runs there) and are refused without it.\n\n" +
			conversationsEx,
	}
	cmd.PersistentFlags().StringVar(&cf.tokenFile, "token-file", "", "credential token file to act with (default: the data dir's operator.token); a device uses its own")
	cmd.AddCommand(newConvListCmd(g, cf), newConvShowCmd(g, cf), newConvNewCmd(g, cf), newConvResetCmd(g, cf),
		newConvTakeCmd(g, cf), newConvReleaseCmd(g, cf),
		newQuestionsCmd(g, cf), newAnswerCmd(g, cf), newCancelQuestionCmd(g, cf))
	for _, c := range cmd.Commands() {
		if c.Long == "" {
			c.Long = c.Short + "\n\n" + conversationsEx
		} else {
			c.Long += "\n\n" + conversationsEx
		}
	}
	return cmd
}

// errNoGatewayWrite refuses a write with no gateway: done on the database
// the change would emit no event and an answer's continuation could never
// start, so nothing is changed.
var errNoGatewayWrite = errors.New("no gateway running")

// openQuestionOps reaches the running gateway when there is one. Without
// one, a write is refused (exit 1) and a read opens the database read-only
// — and only if it exists: a read never creates state. One line on stderr
// says which mode was used.
func openQuestionOps(cmd *cobra.Command, g *globals, cf *convFlags, write bool) (questionOps, func(), error) {
	p, err := g.paths()
	if err != nil {
		return nil, nil, err
	}
	tok := cf.tokenFile
	if tok == "" {
		tok = p.OperatorToken()
	}
	dctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	c, err := chat.DialGateway(dctx, p.Socket(), tok)
	cancel()
	switch {
	case err == nil:
		fmt.Fprintf(cmd.ErrOrStderr(), "raven: via the gateway on %s\n", p.Socket())
		return remoteQuestions{c}, func() { c.Close() }, nil
	case controlapi.IsCode(err, controlapi.CodeUnauthorized):
		return nil, nil, &exitError{code: exitNotAllowed, err: fmt.Errorf("conversations: the gateway refused the token in %s (restarting the gateway rewrites the operator token): %w", tok, err)}
	case !errors.Is(err, chat.ErrNoGateway):
		// Something listens but would not let us in: falling back to the
		// database would bypass a live gateway.
		return nil, nil, fmt.Errorf("conversations: %w", err)
	}
	if write {
		return nil, nil, fmt.Errorf("conversations: %w on %s: `%s` changes state, which only the gateway may do "+
			"(its events must be written and an answer's continuation must be able to run); start `raven gateway` and try again — nothing was changed: %w",
			errNoGatewayWrite, p.Socket(), cmd.CommandPath(), errNoGatewayWrite)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "raven: no gateway running on %s: reading the database directly\n", p.Socket())
	if _, err := os.Stat(p.DB()); errors.Is(err, os.ErrNotExist) {
		return emptyData{dir: p.Root}, func() {}, nil
	}
	db, err := sqlitedb.Open(p.DB())
	if err != nil {
		return nil, nil, err
	}
	store, err := questions.OpenReadOnly(cmd.Context(), db, questions.StoreOptions{Clock: clock.Real(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return store, func() { db.Close() }, nil
}

// emptyData answers reads on a data dir that has no database yet, without
// creating one.
type emptyData struct{ dir string }

// Writes never reach emptyData (they are refused with no gateway); these
// keep it a whole questionOps all the same.
func (emptyData) InputAnswer(context.Context, auth.Principal, json.RawMessage) (any, error) {
	return nil, errNoGatewayWrite
}
func (emptyData) InputCancel(context.Context, auth.Principal, json.RawMessage) (any, error) {
	return nil, errNoGatewayWrite
}
func (emptyData) ConversationsNew(context.Context, auth.Principal, json.RawMessage) (any, error) {
	return nil, errNoGatewayWrite
}
func (emptyData) ConversationsReset(context.Context, auth.Principal, json.RawMessage) (any, error) {
	return nil, errNoGatewayWrite
}
func (emptyData) ConversationsTake(context.Context, auth.Principal, json.RawMessage) (any, error) {
	return nil, errNoGatewayWrite
}
func (emptyData) ConversationsRelease(context.Context, auth.Principal, json.RawMessage) (any, error) {
	return nil, errNoGatewayWrite
}

func (e emptyData) notFound(params json.RawMessage) error {
	var in struct {
		Conversation string `json:"conversation"`
	}
	_ = json.Unmarshal(params, &in)
	return &remoteQuestionErr{msg: fmt.Sprintf("questions: not_found: no conversation %q (no database in %s yet)", in.Conversation, e.dir),
		code: questions.ErrNotFound}
}

func (e emptyData) ConversationsList(context.Context, auth.Principal, json.RawMessage) (any, error) {
	return questions.ListResult{Conversations: []questions.ConversationView{}}, nil
}

func (e emptyData) ConversationsShow(_ context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	return nil, e.notFound(params)
}

func (e emptyData) InputGet(_ context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	return nil, e.notFound(params)
}

// remoteQuestions calls the questions and conversations methods on the
// gateway. The gateway authenticates the token; the principal argument is
// not sent.
type remoteQuestions struct{ c *controlapi.Client }

func (r remoteQuestions) InputGet(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var s questions.Snapshot
	return s, r.call(ctx, api.InputGet.Name(), params, &s)
}

func (r remoteQuestions) InputAnswer(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var rc questions.Receipt
	return rc, r.call(ctx, api.InputAnswer.Name(), params, &rc)
}

func (r remoteQuestions) InputCancel(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var rc questions.Receipt
	return rc, r.call(ctx, api.InputCancel.Name(), params, &rc)
}

func (r remoteQuestions) ConversationsList(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var v questions.ListResult
	return v, r.call(ctx, api.ConversationsList.Name(), params, &v)
}

func (r remoteQuestions) ConversationsShow(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var v questions.ConversationView
	return v, r.call(ctx, api.ConversationsShow.Name(), params, &v)
}

func (r remoteQuestions) ConversationsNew(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var v questions.ConversationView
	return v, r.call(ctx, api.ConversationsNew.Name(), params, &v)
}

func (r remoteQuestions) ConversationsReset(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var v questions.ConversationView
	return v, r.call(ctx, api.ConversationsReset.Name(), params, &v)
}

func (r remoteQuestions) ConversationsTake(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var v questions.TakeResult
	return v, r.call(ctx, api.ConversationsTake.Name(), params, &v)
}

func (r remoteQuestions) ConversationsRelease(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var v questions.ReleaseResult
	return v, r.call(ctx, api.ConversationsRelease.Name(), params, &v)
}

func (r remoteQuestions) call(ctx context.Context, method string, params json.RawMessage, out any) error {
	if err := r.c.Call(ctx, method, params, out); err != nil {
		if controlapi.IsCode(err, controlapi.CodeMethodNotFound) {
			return fmt.Errorf("conversations: the running gateway does not serve %s (it is older than this raven; restart it): %w", method, err)
		}
		return fromRPC(err)
	}
	return nil
}

// remoteQuestionErr is a questions refusal that came back over the control
// API. It reads exactly like the direct mode's error and unwraps to the
// questions code, so exit codes and questions.CodeOf agree in both modes.
type remoteQuestionErr struct {
	msg  string
	code *questions.Error
}

func (e *remoteQuestionErr) Error() string { return e.msg }
func (e *remoteQuestionErr) Unwrap() error { return e.code }

// questionCodes maps a questions code to its sentinel; rpcQuestionCodes is
// the fallback for a gateway that sends no error data.
var (
	questionCodes = map[string]*questions.Error{
		questions.CodeInvalidParams: questions.ErrInvalidParams, questions.CodeForbidden: questions.ErrForbidden,
		questions.CodeConflict: questions.ErrConflict, questions.CodeNotFound: questions.ErrNotFound,
		questions.CodeExpired: questions.ErrExpired, questions.CodeUnavailable: questions.ErrUnavailable,
		questions.CodeNotAnswer: questions.ErrNotAnswer,
	}
	rpcQuestionCodes = map[int]string{
		controlapi.CodeInvalidParams: questions.CodeInvalidParams, controlapi.CodeForbidden: questions.CodeForbidden,
		controlapi.CodeConflict: questions.CodeConflict, controlapi.CodeNotFound: questions.CodeNotFound,
	}
)

// fromRPC turns a JSON-RPC error into the error the direct mode would have
// returned. Errors that are not refusals of the operation (internal,
// unavailable, a lost connection) stay as they are.
func fromRPC(err error) error {
	var re *controlapi.RPCError
	if !errors.As(err, &re) {
		return fmt.Errorf("conversations: gateway: %w", err)
	}
	var data api.QuestionErrorData
	if re.Data != nil {
		b, _ := json.Marshal(re.Data)
		_ = json.Unmarshal(b, &data)
	}
	if data.Code == "" {
		data.Code = rpcQuestionCodes[re.Code]
	}
	sentinel, ok := questionCodes[data.Code]
	if !ok {
		return fmt.Errorf("conversations: gateway: %w", err)
	}
	code := *sentinel
	code.Reason = data.Reason
	return &remoteQuestionErr{msg: re.Message, code: &code}
}

// opErr gives a refusal its exit code, the same in both modes, and the
// advice that goes with it.
func opErr(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	switch questions.CodeOf(err) {
	case questions.CodeInvalidParams:
		return &exitError{code: exitUsage, err: err}
	case questions.CodeConflict, questions.CodeExpired:
		return &exitError{code: exitConflict, err: fmt.Errorf("%w (read it again: raven conversations questions CONV)", err)}
	case questions.CodeForbidden:
		advice := ""
		var qe *questions.Error
		if errors.As(err, &qe) && qe.Reason == "not_controller" {
			advice = " (take control first: raven conversations take CONV)"
		}
		return &exitError{code: exitNotAllowed, err: fmt.Errorf("%w%s", err, advice)}
	}
	if controlapi.IsCode(err, controlapi.CodeUnauthorized) || controlapi.IsCode(err, controlapi.CodeForbidden) {
		return &exitError{code: exitNotAllowed, err: err}
	}
	return err
}

// requireFlags reports a missing required flag as a usage error (exit 2);
// cobra's own required-flag check would exit 1.
func requireFlags(cmd *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return usageErr(fmt.Errorf("%s: required flag(s) %s not set (see --help)", cmd.CommandPath(), strings.Join(missing, ", ")))
	}
	return nil
}

// runOp opens the ops, runs one call and prints its result.
func runOp(cmd *cobra.Command, g *globals, cf *convFlags, write bool, call func(questionOps) (any, error), print func(io.Writer, any) error) error {
	ops, closeFn, err := openQuestionOps(cmd, g, cf, write)
	if err != nil {
		return err
	}
	defer closeFn()
	res, err := call(ops)
	if err != nil {
		return opErr(err)
	}
	return print(cmd.OutOrStdout(), res)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func newQuestionsCmd(g *globals, cf *convFlags) *cobra.Command {
	var request string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "questions CONVERSATION",
		Short: "Show the conversation's current question (or --request) with its IDs, revision and receipt",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runOp(cmd, g, cf, false, func(ops questionOps) (any, error) {
				return ops.InputGet(cmd.Context(), localOperator, mustJSON(questions.GetParams{Conversation: args[0], RequestID: request}))
			}, func(w io.Writer, res any) error {
				snap, ok := res.(questions.Snapshot)
				if asJSON || g.json || !ok {
					return printJSON(w, res)
				}
				printSnapshot(w, snap)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&request, "request", "", "show this retained request instead of the current one")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the input_get snapshot as JSON")
	return cmd
}

func printSnapshot(w io.Writer, s questions.Snapshot) {
	fmt.Fprintf(w, "conversation  %s\nincarnation   %s\nrevision      %d\nstatus        %s\n", s.Conversation, s.Incarnation, s.Revision, s.Status)
	if s.Request == nil {
		return
	}
	r := s.Request
	fmt.Fprintf(w, "request       %s\n", r.RequestID)
	if r.Header != "" {
		fmt.Fprintf(w, "header        %s\n", r.Header)
	}
	fmt.Fprintf(w, "question      %s\n", r.Question)
	for i, o := range r.Options {
		fmt.Fprintf(w, "  %d. %s  [%s]\n", i+1, o.Label, o.OptionID)
	}
	if r.AllowText {
		fmt.Fprintln(w, "text answers  allowed")
	}
	fmt.Fprintf(w, "expires       %s\n", r.ExpiresAt.Local().Format("2006-01-02 15:04:05"))
	if s.Status == questions.StatusPending {
		fmt.Fprintf(w, "answer with   raven conversations answer %s %s --incarnation %s --revision %d ", s.Conversation, r.RequestID, s.Incarnation, s.Revision)
		if len(r.Options) > 0 {
			fmt.Fprintln(w, "--option OPTION_UUID")
		} else {
			fmt.Fprintln(w, "--text TEXT")
		}
	}
	if rc := s.Receipt; rc != nil {
		printReceipt(w, *rc)
	}
}

func printReceipt(w io.Writer, rc questions.Receipt) {
	fmt.Fprintf(w, "receipt       %s (%s", rc.ReceiptID, rc.Status)
	if rc.Reason != "" && rc.Reason != rc.Status {
		fmt.Fprintf(w, ", %s", rc.Reason)
	}
	fmt.Fprintln(w, ")")
	if rc.OptionID != "" {
		fmt.Fprintf(w, "option        %s\n", rc.OptionID)
	}
	if rc.Text != "" {
		fmt.Fprintf(w, "text          %s\n", rc.Text)
	}
	if rc.RunID != "" {
		fmt.Fprintf(w, "run           %s (continuation %s)\n", rc.RunID, rc.Continuation)
	}
	if rc.ContinuationError != "" {
		fmt.Fprintf(w, "              %s\n", rc.ContinuationError)
	}
	if rc.Duplicate {
		fmt.Fprintln(w, "note          same answer as before: original receipt returned, nothing resubmitted")
	}
}

type bindingFlags struct {
	incarnation string
	revision    int64
	asJSON      bool
}

func (b *bindingFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&b.incarnation, "incarnation", "", "conversation incarnation shown with the question (required)")
	cmd.Flags().Int64Var(&b.revision, "revision", 0, "revision shown with the question (required)")
	cmd.Flags().BoolVar(&b.asJSON, "json", false, "print the receipt as JSON")
}

func newAnswerCmd(g *globals, cf *convFlags) *cobra.Command {
	var bf bindingFlags
	var option, text string
	var stdin bool
	cmd := &cobra.Command{
		Use:   "answer CONVERSATION REQUEST_UUID --incarnation UUID --revision N (--option OPTION_UUID | --text TEXT | --stdin)",
		Short: "Answer the displayed question; a conflict means: read it again",
		Long: "Answer binds to the request, incarnation and revision you were shown. Accepted means the answer\n" +
			"and its continuation run ID were stored, not that Raven has acted on it. Repeating the same answer\n" +
			"returns the original receipt; an uncertain answer is never resubmitted automatically.",
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "incarnation", "revision"); err != nil {
				return err
			}
			n := 0
			for _, set := range []bool{option != "", cmd.Flags().Changed("text"), stdin} {
				if set {
					n++
				}
			}
			if n != 1 {
				return usageErr(errors.New("give exactly one of --option, --text, --stdin"))
			}
			if stdin {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), questions.MaxAnswerTextLen+1))
				if err != nil {
					return fmt.Errorf("read stdin: %w", err)
				}
				if len(b) > questions.MaxAnswerTextLen {
					return usageErr(fmt.Errorf("answer on stdin longer than %d bytes", questions.MaxAnswerTextLen))
				}
				text = strings.TrimRight(string(b), "\r\n")
			}
			return runOp(cmd, g, cf, true, func(ops questionOps) (any, error) {
				return ops.InputAnswer(cmd.Context(), localOperator, mustJSON(questions.AnswerParams{
					Conversation: args[0], RequestID: args[1], Incarnation: bf.incarnation, Revision: bf.revision,
					OptionID: option, Text: text,
				}))
			}, func(w io.Writer, res any) error { return printReceiptResult(w, res, bf.asJSON || g.json) })
		},
	}
	bf.register(cmd)
	cmd.Flags().StringVar(&option, "option", "", "option UUID to select")
	cmd.Flags().StringVar(&text, "text", "", "free-text answer (where the question allows it)")
	cmd.Flags().BoolVar(&stdin, "stdin", false, "read the free-text answer from standard input")
	return cmd
}

func newCancelQuestionCmd(g *globals, cf *convFlags) *cobra.Command {
	var bf bindingFlags
	cmd := &cobra.Command{
		Use:   "cancel-question CONVERSATION REQUEST_UUID --incarnation UUID --revision N",
		Short: "Cancel the displayed question",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "incarnation", "revision"); err != nil {
				return err
			}
			return runOp(cmd, g, cf, true, func(ops questionOps) (any, error) {
				return ops.InputCancel(cmd.Context(), localOperator, mustJSON(questions.CancelParams{
					Conversation: args[0], RequestID: args[1], Incarnation: bf.incarnation, Revision: bf.revision,
				}))
			}, func(w io.Writer, res any) error { return printReceiptResult(w, res, bf.asJSON || g.json) })
		},
	}
	bf.register(cmd)
	return cmd
}

func printReceiptResult(w io.Writer, res any, asJSON bool) error {
	rc, ok := res.(questions.Receipt)
	if asJSON || !ok {
		return printJSON(w, res)
	}
	printReceipt(w, rc)
	return nil
}

// hookOwnerQuestions makes a credential change made by this process (`raven
// auth revoke|rotate`, which work on the database directly) cancel the
// owner questions bound to that credential at once, each with its
// input_resolved event in the event log, rather than on their next read by
// the gateway. The returned func releases the event log.
func hookOwnerQuestions(ctx context.Context, s *auth.Store, db *sql.DB) (func(), error) {
	events, err := eventlog.Open(ctx, db, eventlog.Options{})
	if err != nil {
		return nil, err
	}
	qs, err := questions.OpenStore(ctx, db, questions.StoreOptions{
		Emit: func(ctx context.Context, kind, conv string, payload any) error {
			_, err := events.Append(ctx, kind, conv, payload)
			return err
		},
		Authority: questions.Authority{Controllers: s, Credentials: s},
	})
	if err != nil {
		events.Close()
		return nil, err
	}
	s.OnCredentialChange(qs.CredentialChanged)
	return func() { events.Close() }, nil
}
