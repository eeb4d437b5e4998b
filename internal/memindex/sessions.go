package memindex

import (
	"context"
	"database/sql"
	"fmt"
	"unicode/utf8"

	"github.com/raven-agent/raven/internal/llm"
)

// sessionPage is how many messages one read takes while catching up.
const sessionPage = 1000

// maxMessageBytes bounds what of one message is indexed: a long reply's
// head says what it was about, and the index stays small.
const maxMessageBytes = 8 << 10

// headOf is s cut to at most n bytes on a rune boundary.
func headOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// syncSessions indexes the session messages stored since the last sync
// (by row id, so a message is indexed once whichever process wrote it).
func (ix *Index) syncSessions(ctx context.Context, tx *sql.Tx, m marks) error {
	if ix.o.Sessions == nil {
		return nil
	}
	last := m["session_id"]
	for {
		recs, err := ix.o.Sessions.After(ctx, last, sessionPage)
		if err != nil {
			return fmt.Errorf("%w: sessions: %w", ErrIndex, err)
		}
		docs := make([]doc, 0, len(recs))
		for _, r := range recs {
			last = r.ID
			if r.Role == llm.RoleUser && machinePrompts[r.Origin] {
				continue
			}
			docs = append(docs, doc{kind: KindSession, ref: r.Conversation, role: string(r.Role), at: r.At.UnixNano(), body: headOf(r.Content, maxMessageBytes)})
		}
		if err := insertDocs(ctx, tx, docs); err != nil {
			return err
		}
		if len(recs) < sessionPage {
			break
		}
	}
	m["session_id"] = last
	return nil
}
