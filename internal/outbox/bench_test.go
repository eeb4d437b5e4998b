package outbox

import (
	"context"
	"fmt"
	"testing"
)

func BenchmarkPut(b *testing.B) {
	ctx := context.Background()
	s, _ := open(b, Options{MaxPending: 1 << 30})
	it := item("Your 09:00 reminder: call the dentist about the appointment on Thursday.")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Put(ctx, it); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPending reads a full default-sized outbox: the attach path.
func BenchmarkPending(b *testing.B) {
	ctx := context.Background()
	s, _ := open(b, Options{})
	for i := range DefaultMaxPending {
		if _, err := s.Put(ctx, item(fmt.Sprintf("reminder %d: call the dentist about Thursday", i))); err != nil {
			b.Fatal(err)
		}
	}
	for _, limit := range []int{20, 0} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Pending(ctx, limit); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
