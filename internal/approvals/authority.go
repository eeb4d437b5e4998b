package approvals

import (
	"context"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/questions"
)

// NewAuthority returns the Authority the gateway uses: the credential is
// re-read (rotation and revocation count), then the owner-question rule
// applies — the operator, or the device holding the conversation's Take
// Control lease; a captain or a read-only device never.
func NewAuthority(s *auth.Store) Authority { return storeAuthority{s} }

type storeAuthority struct{ s *auth.Store }

func (a storeAuthority) CanAnswer(ctx context.Context, p auth.Principal, conversation string) error {
	cur, err := a.s.Current(ctx, p)
	if err != nil {
		return err
	}
	return questions.Authority{Controllers: a.s}.CanAnswer(ctx, cur, conversation)
}

// OperatorOnly is the CLI's Authority: `raven approvals` runs as the owner
// on the database directly, and refuses any other principal.
type OperatorOnly struct{}

// CanAnswer allows the operator only.
func (OperatorOnly) CanAnswer(_ context.Context, p auth.Principal, _ string) error {
	return questions.Authority{}.CanAnswer(context.Background(), p, "")
}

// Approve is the exec tool's view of the contract (tools.Approver): ask,
// wait, and report whether an allow-always rule answered.
func (s *Store) Approve(ctx context.Context, command, dir string, grants []string, conversation string) (bool, error) {
	r, err := s.Ask(ctx, Ask{Command: command, Dir: dir, Grants: grants, Conversation: conversation})
	return r.Remembered, err
}
