package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/spine"
)

// runAgent is the Sentinel's SpawnRunner: a micro-agent turn whose result
// is handed back to the Sentinel, which delivers it through its dispatcher
// — recorded in the owner's session and tracked for feedback like any
// nudge — instead of the subagent manager posting it past both.
func (r *Runtime) runAgent(_ context.Context, task string, done executor.SpawnDone) error {
	var b [4]byte
	rand.Read(b[:])
	id := "sa-" + hex.EncodeToString(b[:])
	tk, err := r.scheduler.Submit(spine.TurnRequest{
		Origin: spine.OriginSubagent, ConversationID: "subagent:" + id, Channel: "subagent", ChatID: id,
		Content: "You are a background subagent. Complete this task and reply with the result only:\n\n" + task,
	})
	if err != nil {
		return fmt.Errorf("runtime: spawn micro-agent: %w", err)
	}
	r.GoUntilClose("sentinel-spawn", func(ctx context.Context) error {
		res, err := tk.Wait(ctx)
		if err != nil {
			return nil // shutting down: the turn was cancelled with it
		}
		done(context.WithoutCancel(ctx), res.Reply, res.Err)
		r.wake.RequestWakeNow("micro-agent " + id + " finished")
		return nil
	})
	return nil
}
