package auth

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

const childEnv = "RAVEN_AUTH_TEST_CHILD"

func TestMain(m *testing.M) {
	// Child role: revoke a credential from a separate process, as `raven auth
	// revoke` does beside a running gateway.
	if spec := os.Getenv(childEnv); spec != "" {
		dbPath, name, _ := strings.Cut(spec, "|")
		db, err := sqlitedb.Open(dbPath)
		if err == nil {
			var s *Store
			s, err = NewStore(context.Background(), db, clock.Real())
			if err == nil {
				err = s.Revoke(context.Background(), name)
			}
		}
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var t0 = time.Date(2026, 10, 4, 9, 0, 0, 0, time.UTC)

func newStore(t *testing.T) (*Store, *clock.Fake, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "raven.db")
	db, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clk := clock.NewFake(t0)
	s, err := NewStore(context.Background(), db, clk)
	if err != nil {
		t.Fatal(err)
	}
	return s, clk, path
}

func TestCreateValidation(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	cases := []struct {
		name     string
		role     Role
		cred     string
		readOnly bool
		want     error
	}{
		{"operator", RoleOperator, "op", false, nil},
		{"control device", RoleDevice, "phone", false, nil},
		{"read-only device", RoleDevice, "tablet", true, nil},
		{"captain", RoleCaptain, "ci", false, nil},
		{"duplicate", RoleDevice, "phone", false, ErrExists},
		{"unknown role", Role("root"), "x", false, ErrInvalid},
		{"read-only operator", RoleOperator, "op2", true, ErrInvalid},
		{"read-only captain", RoleCaptain, "cap2", true, ErrInvalid},
		{"empty name", RoleDevice, "", false, ErrInvalid},
		{"bad name", RoleDevice, "a b", false, ErrInvalid},
		{"long name", RoleDevice, strings.Repeat("a", 65), false, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := s.Create(ctx, tc.role, tc.cred, tc.readOnly)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.want != nil {
				return
			}
			if !strings.HasPrefix(tok, TokenPrefix) {
				t.Fatalf("token %q lacks prefix", tok)
			}
			p, err := s.Verify(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			want := Principal{Name: tc.cred, Role: tc.role, ReadOnly: tc.readOnly, Generation: 1}
			if p != want {
				t.Fatalf("principal = %+v, want %+v", p, want)
			}
		})
	}
}

func TestVerifyRevokeRotate(t *testing.T) {
	s, clk, _ := newStore(t)
	ctx := context.Background()
	tok, err := s.Create(ctx, RoleDevice, "phone", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "rvn_", "rvn_short", "nope", tok + "x", strings.Repeat("a", 10000)} {
		if _, err := s.Verify(ctx, bad); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("Verify(%.20q) = %v, want ErrUnauthenticated", bad, err)
		}
	}
	clk.Advance(time.Minute)
	tok2, err := s.Rotate(ctx, "phone")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(ctx, tok); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("old token after rotate: %v", err)
	}
	p, err := s.Verify(ctx, tok2)
	if err != nil || p.Generation != 2 {
		t.Fatalf("new token: %+v %v", p, err)
	}
	if err := s.Revoke(ctx, "phone"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(ctx, tok2); !errors.Is(err, ErrRevoked) {
		t.Fatalf("revoked: %v", err)
	}
	if err := s.Revoke(ctx, "phone"); err != nil {
		t.Fatalf("second revoke: %v", err)
	}
	if _, err := s.Rotate(ctx, "phone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rotate revoked: %v", err)
	}
	if err := s.Revoke(ctx, "ghost"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	c := list[0]
	if !c.Revoked() || c.RotatedAt.IsZero() || c.Generation != 2 || !c.CreatedAt.Equal(t0) {
		t.Fatalf("listed %+v", c)
	}
	// A revoked name can be reused; the generation keeps counting.
	tok3, err := s.Create(ctx, RoleDevice, "phone", true)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.Verify(ctx, tok3); err != nil || p.Generation != 3 || !p.ReadOnly {
		t.Fatalf("recreated: %+v %v", p, err)
	}
	if _, err := s.Verify(ctx, tok2); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("token of the revoked incarnation: %v", err)
	}
}

func TestRevokeFromAnotherProcess(t *testing.T) {
	s, _, path := newStore(t)
	ctx := context.Background()
	tok, err := s.Create(ctx, RoleDevice, "phone", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(ctx, tok); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path+"|phone")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v: %s", err, out)
	}
	if _, err := s.Verify(ctx, tok); !errors.Is(err, ErrRevoked) {
		t.Fatalf("after child revoke: %v", err)
	}
}

func TestTakeControlAuthority(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	mk := func(role Role, name string, ro bool) Principal {
		tok, err := s.Create(ctx, role, name, ro)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Verify(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		p    Principal
		want error
	}{
		{mk(RoleOperator, "op", false), nil},
		{mk(RoleDevice, "phone", false), nil},
		{mk(RoleDevice, "tablet", true), ErrForbidden},
		{mk(RoleCaptain, "ci", false), ErrForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.p.Name, func(t *testing.T) {
			conv := "tui:" + tc.p.Name
			_, err := s.TakeControl(ctx, tc.p, conv, 0)
			if !errors.Is(err, tc.want) {
				t.Fatalf("take: %v, want %v", err, tc.want)
			}
			if got := s.CanControl(ctx, tc.p, conv); got != (tc.want == nil) {
				t.Fatalf("CanControl = %v", got)
			}
			// A read-only device or captain never controls, even with no lease in the way.
			if tc.want != nil && s.CanControl(ctx, tc.p, "other") {
				t.Fatal("CanControl without authority")
			}
		})
	}
	if _, err := s.TakeControl(ctx, cases[1].p, "c", time.Second); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ttl too short: %v", err)
	}
	if _, err := s.TakeControl(ctx, cases[1].p, "", 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty conversation: %v", err)
	}
}

func TestLeaseLifecycle(t *testing.T) {
	s, clk, _ := newStore(t)
	ctx := context.Background()
	verify := func(tok string) Principal {
		p, err := s.Verify(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokA, _ := s.Create(ctx, RoleDevice, "a", false)
	tokB, _ := s.Create(ctx, RoleDevice, "b", false)
	tokOp, _ := s.Create(ctx, RoleOperator, "op", false)
	a, b, op := verify(tokA), verify(tokB), verify(tokOp)
	const conv = "telegram:42"

	if _, ok := s.ActiveController(ctx, conv); ok {
		t.Fatal("controller before any take")
	}
	l, err := s.TakeControl(ctx, a, conv, time.Minute)
	if err != nil || l.Replaced != "" || !l.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("take a: %+v %v", l, err)
	}
	if name, ok := s.ActiveController(ctx, conv); !ok || name != "a" {
		t.Fatalf("controller = %q %v", name, ok)
	}
	// Lease expiry is judged by the injected clock.
	clk.Advance(59 * time.Second)
	if !s.CanControl(ctx, a, conv) {
		t.Fatal("a lost control before expiry")
	}
	clk.Advance(time.Second)
	if _, ok := s.ActiveController(ctx, conv); ok || s.CanControl(ctx, a, conv) {
		t.Fatal("lease survived its expiry")
	}
	// A second device replaces the first.
	if _, err := s.TakeControl(ctx, a, conv, time.Minute); err != nil {
		t.Fatal(err)
	}
	l, err = s.TakeControl(ctx, b, conv, time.Minute)
	if err != nil || l.Replaced != "a" {
		t.Fatalf("take b: %+v %v", l, err)
	}
	if s.CanControl(ctx, a, conv) || !s.CanControl(ctx, b, conv) {
		t.Fatal("replacement did not move control")
	}
	if _, err := s.Release(ctx, a, conv); !errors.Is(err, ErrForbidden) {
		t.Fatalf("a releasing b's lease: %v", err)
	}
	if ok, err := s.Release(ctx, op, conv); err != nil || !ok {
		t.Fatalf("operator release: %v %v", ok, err)
	}
	if ok, err := s.Release(ctx, op, conv); err != nil || ok {
		t.Fatalf("second release: %v %v", ok, err)
	}
	// Rotation ends the lease and refuses the stale principal.
	if _, err := s.TakeControl(ctx, b, conv, time.Minute); err != nil {
		t.Fatal(err)
	}
	tokB2, err := s.Rotate(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.ActiveController(ctx, conv); ok {
		t.Fatal("lease survived rotation")
	}
	if _, err := s.TakeControl(ctx, b, conv, time.Minute); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("stale principal take: %v", err)
	}
	b2 := verify(tokB2)
	if _, err := s.TakeControl(ctx, b2, conv, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Revoke(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.ActiveController(ctx, conv); ok || s.CanControl(ctx, b2, conv) {
		t.Fatal("lease survived revoke")
	}
	if !s.CanControl(ctx, op, conv) {
		t.Fatal("operator must always control")
	}
}

func TestEnsureOperatorToken(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "operator.token")
	wrote, err := s.EnsureOperatorToken(ctx, path)
	if err != nil || !wrote {
		t.Fatalf("first: %v %v", wrote, err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode: %v %v", st.Mode(), err)
	}
	tok, err := ReadTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.Verify(ctx, tok); err != nil || !p.IsOperator() {
		t.Fatalf("verify: %+v %v", p, err)
	}
	if wrote, err := s.EnsureOperatorToken(ctx, path); err != nil || wrote {
		t.Fatalf("second: %v %v", wrote, err)
	}
	// A revoked operator is re-created; a lost file gets a rotated token.
	if err := s.Revoke(ctx, OperatorName); err != nil {
		t.Fatal(err)
	}
	if wrote, err := s.EnsureOperatorToken(ctx, path); err != nil || !wrote {
		t.Fatalf("after revoke: %v %v", wrote, err)
	}
	os.Remove(path)
	if wrote, err := s.EnsureOperatorToken(ctx, path); err != nil || !wrote {
		t.Fatalf("after loss: %v %v", wrote, err)
	}
	tok2, _ := ReadTokenFile(path)
	if p, err := s.Verify(ctx, tok2); err != nil || p.Generation != 3 {
		t.Fatalf("final: %+v %v", p, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadTokenFile(path); err == nil || !strings.Contains(err.Error(), "0600") {
		t.Fatalf("loose mode accepted: %v", err)
	}
}

func BenchmarkVerify(b *testing.B) {
	path := filepath.Join(b.TempDir(), "raven.db")
	db, err := sqlitedb.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := NewStore(context.Background(), db, clock.Real())
	if err != nil {
		b.Fatal(err)
	}
	tok, _ := s.Create(context.Background(), RoleDevice, "d", false)
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Verify(context.Background(), tok); err != nil {
			b.Fatal(err)
		}
	}
}

func TestValidName(t *testing.T) {
	long := strings.Repeat("a", 64)
	cases := map[string]bool{
		"phone": true, "my.laptop_2-b": true, "9lives": true, long: true,
		"": false, long + "a": false, ".hidden": false, "-x": false, "has space": false, "naïve": false, "a/b": false,
	}
	for name, want := range cases {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}
