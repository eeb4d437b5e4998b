package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/chat"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/gateway"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// localOperator is the principal of direct database access by the local
// operator, used only when no gateway runs on the data dir.
var localOperator = auth.Principal{Name: "local", Role: auth.RoleOperator}

// questionOps are the dispatcher operations the CLI calls: input_get,
// input_answer, input_cancel. A running gateway serves them over the control
// API (the principal is then the operator token's); without one they run on
// the database directly.
type questionOps interface {
	InputGet(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
	InputAnswer(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
	InputCancel(ctx context.Context, p auth.Principal, params json.RawMessage) (any, error)
}

func newConversationsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "conversations",
		Short: "Read, answer or cancel owner conversation questions",
	}
	cmd.AddCommand(newQuestionsCmd(g), newAnswerCmd(g), newCancelQuestionCmd(g))
	return cmd
}

// openQuestionOps reaches the running gateway when there is one, so the
// answer emits input_resolved and its continuation turn runs there. Only
// when nothing listens on the socket does it open the store as the local
// operator; the continuation cannot be submitted then, so it is recorded as
// failed on the receipt rather than left looking in flight. Either way one
// line on stderr says which mode was used.
func openQuestionOps(cmd *cobra.Command, g *globals) (questionOps, func(), error) {
	p, err := g.paths()
	if err != nil {
		return nil, nil, err
	}
	dctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	c, err := chat.DialGateway(dctx, p.Socket(), p.OperatorToken())
	cancel()
	switch {
	case err == nil:
		fmt.Fprintf(cmd.ErrOrStderr(), "raven: via the gateway on %s\n", p.Socket())
		return remoteQuestions{c}, func() { c.Close() }, nil
	case controlapi.IsCode(err, controlapi.CodeUnauthorized):
		return nil, nil, fmt.Errorf("conversations: the gateway refused the operator token in %s (restarting the gateway rewrites it): %w", p.OperatorToken(), err)
	case !errors.Is(err, chat.ErrNoGateway):
		// Something listens but would not let us in: falling back to the
		// database would bypass a live gateway.
		return nil, nil, fmt.Errorf("conversations: %w", err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "raven: no gateway running on %s: using the database directly (an answer's continuation cannot run)\n", p.Socket())
	db, err := sqlitedb.Open(p.DB())
	if err != nil {
		return nil, nil, err
	}
	store, err := questions.OpenStore(cmd.Context(), db, questions.StoreOptions{
		Clock:  clock.Real(),
		Logger: slog.New(slog.DiscardHandler),
		Continue: func(context.Context, string, string, questions.OwnerAnswer) error {
			return errors.New("answered from the CLI without the gateway: continuation not submitted")
		},
	})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return store, func() { db.Close() }, nil
}

// remoteQuestions calls input_get, input_answer and input_cancel on the
// gateway. The gateway authenticates the operator token; the principal
// argument is not sent.
type remoteQuestions struct{ c *controlapi.Client }

func (r remoteQuestions) InputGet(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var s questions.Snapshot
	return s, r.call(ctx, "input_get", params, &s)
}

func (r remoteQuestions) InputAnswer(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var rc questions.Receipt
	return rc, r.call(ctx, "input_answer", params, &rc)
}

func (r remoteQuestions) InputCancel(ctx context.Context, _ auth.Principal, params json.RawMessage) (any, error) {
	var rc questions.Receipt
	return rc, r.call(ctx, "input_cancel", params, &rc)
}

func (r remoteQuestions) call(ctx context.Context, method string, params json.RawMessage, out any) error {
	if err := r.c.Call(ctx, method, params, out); err != nil {
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
// returned. Errors that are not refusals of the operation (unauthorized,
// internal, unavailable, a lost connection) stay as they are: exit 1.
func fromRPC(err error) error {
	var re *controlapi.RPCError
	if !errors.As(err, &re) {
		return fmt.Errorf("conversations: gateway: %w", err)
	}
	var data gateway.QuestionErrorData
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

// opErr turns bad input into exit 2 and every other refusal into exit 1, in
// both modes.
func opErr(err error) error {
	if questions.CodeOf(err) == questions.CodeInvalidParams {
		return usageErr(err)
	}
	return err
}

func newQuestionsCmd(g *globals) *cobra.Command {
	var request string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "questions CONVERSATION",
		Short: "Show the conversation's current question (or --request) with its IDs, revision and receipt",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops, closeFn, err := openQuestionOps(cmd, g)
			if err != nil {
				return err
			}
			defer closeFn()
			params, _ := json.Marshal(questions.GetParams{Conversation: args[0], RequestID: request})
			res, err := ops.InputGet(cmd.Context(), localOperator, params)
			if err != nil {
				return opErr(err)
			}
			if asJSON || g.json {
				return printJSON(cmd.OutOrStdout(), res)
			}
			snap, ok := res.(questions.Snapshot)
			if !ok {
				return printJSON(cmd.OutOrStdout(), res)
			}
			printSnapshot(cmd.OutOrStdout(), snap)
			return nil
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
	cmd.MarkFlagRequired("incarnation")
	cmd.MarkFlagRequired("revision")
}

func newAnswerCmd(g *globals) *cobra.Command {
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
			ops, closeFn, err := openQuestionOps(cmd, g)
			if err != nil {
				return err
			}
			defer closeFn()
			params, _ := json.Marshal(questions.AnswerParams{
				Conversation: args[0], RequestID: args[1], Incarnation: bf.incarnation, Revision: bf.revision,
				OptionID: option, Text: text,
			})
			res, err := ops.InputAnswer(cmd.Context(), localOperator, params)
			if err != nil {
				return opErr(err)
			}
			return printReceiptResult(cmd.OutOrStdout(), res, bf.asJSON || g.json)
		},
	}
	bf.register(cmd)
	cmd.Flags().StringVar(&option, "option", "", "option UUID to select")
	cmd.Flags().StringVar(&text, "text", "", "free-text answer (where the question allows it)")
	cmd.Flags().BoolVar(&stdin, "stdin", false, "read the free-text answer from standard input")
	return cmd
}

func newCancelQuestionCmd(g *globals) *cobra.Command {
	var bf bindingFlags
	cmd := &cobra.Command{
		Use:   "cancel-question CONVERSATION REQUEST_UUID --incarnation UUID --revision N",
		Short: "Cancel the displayed question",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ops, closeFn, err := openQuestionOps(cmd, g)
			if err != nil {
				return err
			}
			defer closeFn()
			params, _ := json.Marshal(questions.CancelParams{
				Conversation: args[0], RequestID: args[1], Incarnation: bf.incarnation, Revision: bf.revision,
			})
			res, err := ops.InputCancel(cmd.Context(), localOperator, params)
			if err != nil {
				return opErr(err)
			}
			return printReceiptResult(cmd.OutOrStdout(), res, bf.asJSON || g.json)
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
