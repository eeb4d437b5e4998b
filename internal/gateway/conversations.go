package gateway

import (
	"context"

	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/questions"
)

// RegisterQuestions serves the durable owner questions (input_get,
// input_answer, input_cancel) and the owner-conversation lifecycle
// (conversations.*) on s, each with the access level its seed gives it and
// the questions package's typed errors mapped onto JSON-RPC errors.
func RegisterQuestions(s *controlapi.Server, qs *questions.Store) {
	controlapi.Handle(s, api.InputGet, controlapi.Read,
		func(ctx context.Context, c *controlapi.Call, in questions.GetParams) (questions.Snapshot, error) {
			return rpcErr(qs.Get(ctx, c.Principal, in))
		})
	controlapi.Handle(s, api.InputAnswer, controlapi.Control,
		func(ctx context.Context, c *controlapi.Call, in questions.AnswerParams) (questions.Receipt, error) {
			return rpcErr(qs.Answer(ctx, c.Principal, in))
		})
	controlapi.Handle(s, api.InputCancel, controlapi.Control,
		func(ctx context.Context, c *controlapi.Call, in questions.CancelParams) (questions.Receipt, error) {
			return rpcErr(qs.Cancel(ctx, c.Principal, in))
		})

	controlapi.Handle(s, api.ConversationsList, controlapi.Read,
		func(ctx context.Context, c *controlapi.Call, _ api.Empty) (questions.ListResult, error) {
			cs, err := qs.ListConversations(ctx, c.Principal)
			return rpcErr(questions.ListResult{Conversations: cs}, err)
		})
	controlapi.Handle(s, api.ConversationsShow, controlapi.Read,
		func(ctx context.Context, c *controlapi.Call, in questions.ConversationParams) (questions.ConversationView, error) {
			return rpcErr(qs.ShowConversation(ctx, c.Principal, in.Conversation))
		})
	controlapi.Handle(s, api.ConversationsOpen, controlapi.Operator,
		func(ctx context.Context, c *controlapi.Call, in questions.OpenParams) (questions.OpenResult, error) {
			return rpcErr(qs.OpenOwner(ctx, c.Principal, in.Conversation, in.Workspace))
		})
	controlapi.Handle(s, api.ConversationsNew, controlapi.Operator,
		func(ctx context.Context, c *controlapi.Call, in questions.NewParams) (questions.ConversationView, error) {
			return rpcErr(qs.NewConversation(ctx, c.Principal, in.Conversation, in.Kind, in.Workspace))
		})
	controlapi.Handle(s, api.ConversationsReset, controlapi.Control,
		func(ctx context.Context, c *controlapi.Call, in questions.ConversationParams) (questions.ConversationView, error) {
			return rpcErr(qs.ResetAs(ctx, c.Principal, in.Conversation))
		})
	controlapi.Handle(s, api.ConversationsTake, controlapi.Control,
		func(ctx context.Context, c *controlapi.Call, in questions.TakeParams) (questions.TakeResult, error) {
			return rpcErr(qs.TakeAs(ctx, c.Principal, in))
		})
	controlapi.Handle(s, api.ConversationsRelease, controlapi.Control,
		func(ctx context.Context, c *controlapi.Call, in questions.ConversationParams) (questions.ReleaseResult, error) {
			return rpcErr(qs.ReleaseControl(ctx, c.Principal, in.Conversation))
		})
	controlapi.Handle(s, api.ConversationsNative, controlapi.Operator,
		func(ctx context.Context, c *controlapi.Call, in questions.NativeParams) (questions.NativeResult, error) {
			return rpcErr(qs.Native(ctx, c.Principal, in))
		})
}
