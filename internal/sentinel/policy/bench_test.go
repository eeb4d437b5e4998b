package policy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/statefile"
)

// filledPolicy returns a memory-only policy holding n fires spread over the
// last week, each with its own topic, session and content.
func filledPolicy(b *testing.B, n int) (*Policy, *clock.Fake) {
	b.Helper()
	start := checkTime.Add(-week + time.Minute)
	clk := clock.NewFake(start)
	cfg := roomyConfig()
	p, err := New(cfg, Options{Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	step := (week - 2*time.Minute) / time.Duration(n)
	for i := 0; i < n; i++ {
		clk.Set(start.Add(time.Duration(i) * step))
		req := nudge(fmt.Sprintf("telegram:%d", i%50), fmt.Sprintf("topic-%d", i%500), fmt.Sprintf("message number %d", i))
		if _, err := p.RecordFired(context.Background(), req); err != nil {
			b.Fatal(err)
		}
		if i%7 == 0 {
			_ = p.RecordOutcome(context.Background(), fmt.Sprint("topic-", i%500), VerdictAccepted)
		}
	}
	clk.Set(checkTime)
	return p, clk
}

var allowReq = Request{Action: ActionNudge, SessionKey: "telegram:new", Content: "Your parcel arrives at the post office today", Priority: PriorityMedium}

func BenchmarkCheckAllow(b *testing.B) {
	p, _ := filledPolicy(b, 10_000)
	if n := len(p.led.fires); n != 10_000 {
		b.Fatalf("ledger has %d entries", n)
	}
	ctx := context.Background()
	if v := p.Check(ctx, allowReq); !v.Allow {
		b.Fatal(v)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v := p.Check(ctx, allowReq); !v.Allow {
			b.Fatal(v)
		}
	}
}

func TestCheckAllowDoesNotAllocate(t *testing.T) {
	h := newHarness(t, nil, Options{})
	for i := 0; i < 20; i++ {
		h.fire(-time.Duration(100-i)*time.Hour, nudge(fmt.Sprint("s", i), fmt.Sprint("t", i), fmt.Sprint("m", i)))
	}
	h.at(0)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		if v := h.p.Check(ctx, allowReq); !v.Allow {
			t.Fatal(v)
		}
	})
	if allocs != 0 {
		t.Fatalf("allow path allocates %.1f times per Check", allocs)
	}
}

// storedPolicy persists a 10k-entry ledger (~1 MB) and returns a fresh
// policy reading it through a Store, plus a peer store on the same file.
// legacy writes the older single-section layout instead.
func storedPolicy(b *testing.B, legacy bool) (*Policy, *statefile.Store, *clock.Fake) {
	mem, clk := filledPolicy(b, 10_000)
	path := filepath.Join(b.TempDir(), "state.json")
	peer, _ := statefile.Open(path, statefile.Options{})
	var err error
	if legacy {
		err = peer.Update(context.Background(), func(tx *statefile.Tx) error {
			return tx.Put(StateSection, mem.led.persist())
		})
	} else {
		writer, _ := New(roomyConfig(), Options{Clock: clk, Store: peer})
		writer.led = mem.led
		err = writer.updateLocked(context.Background(), func() {})
	}
	if err != nil {
		b.Fatal(err)
	}
	st, _ := statefile.Open(path, statefile.Options{})
	p, err := New(roomyConfig(), Options{Clock: clk, Store: st})
	if err != nil {
		b.Fatal(err)
	}
	if v := p.Check(context.Background(), allowReq); !v.Allow {
		b.Fatal(v)
	}
	if n := len(p.led.fires); n != 10_000 {
		b.Fatalf("loaded %d fires", n)
	}
	fi, _ := os.Stat(path)
	b.ReportMetric(float64(fi.Size())/1e6, "MB_state")
	return p, peer, clk
}

func BenchmarkCheckHydrate1MB(b *testing.B) {
	p, _, _ := storedPolicy(b, false)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v := p.Check(ctx, allowReq); !v.Allow {
			b.Fatal(v)
		}
	}
}

// BenchmarkCheckHydrateChanged: before every Check a peer process changes
// the file; the peer's write is excluded from the timing.
// "other_section": the peer changed the injector's section (file re-read,
// ledger kept). "policy_section": a peer policy recorded a fire (one hour
// chunk rewritten: that chunk decoded, the new fire indexed).
// "policy_outcome": a peer recorded a verdict (one day chunk decoded, the
// ledger re-indexed from memory). "legacy_section": the older layout, the
// whole ledger in one section, rewritten (decoded and re-indexed whole).
func BenchmarkCheckHydrateChanged(b *testing.B) {
	for _, section := range []string{"other_section", "policy_section", "policy_outcome", "legacy_section"} {
		b.Run(section, func(b *testing.B) {
			p, peer, clk := storedPolicy(b, section == "legacy_section")
			var peerState persisted
			if section == "legacy_section" {
				peerState = p.led.persist()
				peerState.Fires = append([]fireRec(nil), peerState.Fires...)
			}
			peerPolicy, err := New(roomyConfig(), Options{Clock: clk, Store: peer})
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				switch section {
				case "policy_section":
					clk.Advance(time.Second)
					_, err = peerPolicy.RecordFired(ctx, nudge(fmt.Sprintf("telegram:%d", i%50), fmt.Sprintf("topic-%d", i%500), fmt.Sprintf("peer message %d", i)))
				case "policy_outcome":
					clk.Advance(time.Second)
					err = peerPolicy.RecordOutcome(ctx, fmt.Sprint("topic-", i%500), VerdictAccepted)
				default:
					err = peer.Update(ctx, func(tx *statefile.Tx) error {
						if section == "other_section" {
							return tx.Put("injector", map[string]int{"n": i})
						}
						peerState.Multiplier = 1 + float64(i%2)/100
						return tx.Put(StateSection, peerState)
					})
				}
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if v := p.Check(ctx, allowReq); !v.Allow {
					b.Fatal(v)
				}
			}
		})
	}
}

// A queued inject re-checked when it rides a reply (Request.Charged) and a
// menu pick (Request.Answer) take the same allocation-free path.
func BenchmarkCheckChargedAndAnswer(b *testing.B) {
	p, _ := filledPolicy(b, 10_000)
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		req  Request
	}{
		{"charged", func() Request { r := allowReq; r.Action, r.Charged = ActionInject, true; return r }()},
		{"answer", func() Request { r := allowReq; r.Action, r.Answer = ActionInject, true; return r }()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if v := p.Check(ctx, bc.req); !v.Allow {
				b.Fatal(v)
			}
			b.ReportAllocs()
			for b.Loop() {
				if v := p.Check(ctx, bc.req); !v.Allow {
					b.Fatal(v)
				}
			}
		})
	}
}
