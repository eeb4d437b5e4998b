package auth

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

var migrations = []string{
	`CREATE TABLE auth_credentials (
		name        TEXT PRIMARY KEY,
		role        TEXT NOT NULL,
		read_only   INTEGER NOT NULL DEFAULT 0,
		token_hash  BLOB NOT NULL UNIQUE,
		generation  INTEGER NOT NULL,
		created_at  INTEGER NOT NULL,
		rotated_at  INTEGER,
		revoked_at  INTEGER
	);
	CREATE TABLE auth_leases (
		conversation TEXT PRIMARY KEY,
		holder       TEXT NOT NULL REFERENCES auth_credentials(name) ON DELETE CASCADE,
		generation   INTEGER NOT NULL,
		acquired_at  INTEGER NOT NULL,
		expires_at   INTEGER NOT NULL
	);`,
}

// Credential is one stored credential as listed to the operator. The token
// itself is never stored; only its hash.
type Credential struct {
	Name       string    `json:"name"`
	Role       Role      `json:"role"`
	ReadOnly   bool      `json:"read_only"`
	Generation int       `json:"generation"`
	CreatedAt  time.Time `json:"created_at"`
	RotatedAt  time.Time `json:"rotated_at,omitzero"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
}

// Revoked reports whether the credential has been revoked.
func (c Credential) Revoked() bool { return !c.RevokedAt.IsZero() }

// Store is the credential store and the Take Control lease table, both in
// raven.db. Several processes may share it (the gateway and `raven auth`):
// every check reads the database, so a revoke or rotate done by the CLI takes
// effect on the gateway's next call.
type Store struct {
	db     *sql.DB
	clk    clock.Clock
	verify *sql.Stmt // the hot path: one indexed lookup per control API call

	hooksMu sync.Mutex
	hooks   []CredentialHook
}

// CredentialChange is what happened to a credential.
type CredentialChange string

const (
	CredentialRevoked CredentialChange = "revoked"
	CredentialRotated CredentialChange = "rotated"
)

// CredentialHook is told, after the change committed, that a credential was
// revoked or rotated, so state bound to it (an owner question) ends at once
// rather than on its next use. It runs on the caller's goroutine and must
// not call back into the Store's write methods.
type CredentialHook func(ctx context.Context, name string, change CredentialChange)

// OnCredentialChange registers h for every later Revoke and Rotate made
// through this Store. A change made by another process on the same
// database is seen on the next use of the credential instead.
func (s *Store) OnCredentialChange(h CredentialHook) {
	s.hooksMu.Lock()
	defer s.hooksMu.Unlock()
	s.hooks = append(s.hooks, h)
}

func (s *Store) changed(ctx context.Context, name string, change CredentialChange) {
	s.hooksMu.Lock()
	hooks := append([]CredentialHook(nil), s.hooks...)
	s.hooksMu.Unlock()
	for _, h := range hooks {
		// Committed: the hook must run even if the caller is leaving.
		h(context.WithoutCancel(ctx), name, change)
	}
}

// NewStore migrates the auth tables in db and returns the store.
func NewStore(ctx context.Context, db *sql.DB, clk clock.Clock) (*Store, error) {
	if err := sqlitedb.Migrate(ctx, db, "auth", migrations); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	verify, err := db.PrepareContext(ctx, `SELECT name, role, read_only, generation, token_hash, revoked_at
		FROM auth_credentials WHERE token_hash = ?`)
	if err != nil {
		return nil, fmt.Errorf("auth: prepare: %w", err)
	}
	return &Store{db: db, clk: clk, verify: verify}, nil
}

// ValidName reports whether name is acceptable for a credential:
// 1..64 characters of letters, digits, '.', '_' and '-', starting alphanumeric.
// It is a loop rather than a regexp: a counted-repeat pattern compiled at
// package init cost every raven command ~860 allocations at start-up.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

func validateNew(role Role, name string, readOnly bool) error {
	if !ValidName(name) {
		return fmt.Errorf("%w: name %q: want 1..64 of [A-Za-z0-9._-], starting with a letter or digit", ErrInvalid, name)
	}
	switch role {
	case RoleDevice:
	case RoleOperator, RoleCaptain:
		if readOnly {
			return fmt.Errorf("%w: --read-only applies to devices only (a captain is always read-only, an operator never)", ErrInvalid)
		}
	default:
		return fmt.Errorf("%w: role %q: want operator, device or captain", ErrInvalid, role)
	}
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.UnixMilli(v.Int64).UTC()
}

// Create stores a new credential and returns its token. The token is shown
// this once; only its hash is kept. A revoked credential's name may be
// reused: the new credential continues its generation count.
func (s *Store) Create(ctx context.Context, role Role, name string, readOnly bool) (string, error) {
	if err := validateNew(role, name, readOnly); err != nil {
		return "", err
	}
	tok, hash, err := newToken()
	if err != nil {
		return "", err
	}
	now := ms(s.clk.Now())
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var revoked sql.NullInt64
		var gen int
		err := tx.QueryRowContext(ctx, `SELECT revoked_at, generation FROM auth_credentials WHERE name = ?`, name).Scan(&revoked, &gen)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO auth_credentials (name, role, read_only, token_hash, generation, created_at)
				VALUES (?, ?, ?, ?, 1, ?)`, name, string(role), readOnly, hash, now)
			return err
		case err != nil:
			return err
		case !revoked.Valid:
			return fmt.Errorf("%w: %q", ErrExists, name)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM auth_leases WHERE holder = ?`, name); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE auth_credentials SET role = ?, read_only = ?, token_hash = ?, generation = ?,
			created_at = ?, rotated_at = NULL, revoked_at = NULL WHERE name = ?`, string(role), readOnly, hash, gen+1, now, name)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("auth: create %s: %w", name, err)
	}
	return tok, nil
}

// List returns every credential, revoked ones included, by name.
func (s *Store) List(ctx context.Context) ([]Credential, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, role, read_only, generation, created_at, rotated_at, revoked_at
		FROM auth_credentials ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("auth: list: %w", err)
	}
	defer rows.Close()
	var out []Credential
	for rows.Next() {
		var c Credential
		var role string
		var created int64
		var rotated, revoked sql.NullInt64
		if err := rows.Scan(&c.Name, &role, &c.ReadOnly, &c.Generation, &created, &rotated, &revoked); err != nil {
			return nil, fmt.Errorf("auth: list: %w", err)
		}
		c.Role = Role(role)
		c.CreatedAt = time.UnixMilli(created).UTC()
		c.RotatedAt, c.RevokedAt = fromMS(rotated), fromMS(revoked)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("auth: list: %w", err)
	}
	return out, nil
}

// Revoke disables the credential: its token is refused (ErrRevoked) from the
// next call on, and any lease it holds ends. Revoking twice is a no-op.
func (s *Store) Revoke(ctx context.Context, name string) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE auth_credentials SET revoked_at = COALESCE(revoked_at, ?) WHERE name = ?`, ms(s.clk.Now()), name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: no credential %q", ErrNotFound, name)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM auth_leases WHERE holder = ?`, name)
		return err
	})
	if err != nil {
		return fmt.Errorf("auth: revoke %s: %w", name, err)
	}
	s.changed(ctx, name, CredentialRevoked)
	return nil
}

// Rotate replaces the credential's token and returns the new one. The old
// token is refused from the next call on, and leases taken under it end.
func (s *Store) Rotate(ctx context.Context, name string) (string, error) {
	tok, hash, err := newToken()
	if err != nil {
		return "", err
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE auth_credentials SET token_hash = ?, generation = generation + 1, rotated_at = ?
			WHERE name = ? AND revoked_at IS NULL`, hash, ms(s.clk.Now()), name)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: no live credential %q", ErrNotFound, name)
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM auth_leases WHERE holder = ?`, name)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("auth: rotate %s: %w", name, err)
	}
	s.changed(ctx, name, CredentialRotated)
	return tok, nil
}

// Verify authenticates token against the store, now. It is meant to be
// called on every request: nothing is cached, so revocation and rotation
// take effect on the next call. Errors: ErrUnauthenticated, ErrRevoked, or a
// wrapped storage error.
func (s *Store) Verify(ctx context.Context, token string) (Principal, error) {
	if !wellFormed(token) {
		return Principal{}, ErrUnauthenticated
	}
	want := hashToken(token)
	var p Principal
	var role string
	var stored []byte
	var revoked sql.NullInt64
	err := s.verify.QueryRowContext(ctx, want).Scan(&p.Name, &role, &p.ReadOnly, &p.Generation, &stored, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return Principal{}, ErrUnauthenticated
	}
	if err != nil {
		return Principal{}, fmt.Errorf("auth: verify: %w", err)
	}
	// The index lookup already matched; the constant-time compare keeps the
	// decision itself free of data-dependent timing.
	if !hashEqual(stored, want) {
		return Principal{}, ErrUnauthenticated
	}
	if revoked.Valid {
		return Principal{}, ErrRevoked
	}
	p.Role = Role(role)
	return p, nil
}

// current re-reads p's credential inside tx and returns it as it is now. A
// principal from an earlier Verify whose credential was since rotated or
// revoked is refused.
func current(ctx context.Context, tx *sql.Tx, p Principal) (Principal, error) {
	var now Principal
	var role string
	var revoked sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT name, role, read_only, generation, revoked_at FROM auth_credentials WHERE name = ?`,
		p.Name).Scan(&now.Name, &role, &now.ReadOnly, &now.Generation, &revoked)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Principal{}, ErrUnauthenticated
	case err != nil:
		return Principal{}, err
	case revoked.Valid:
		return Principal{}, ErrRevoked
	case now.Generation != p.Generation:
		return Principal{}, ErrUnauthenticated
	}
	now.Role = Role(role)
	return now, nil
}

func (s *Store) tx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// CredentialGeneration reports name's current generation and whether it is
// still active (not revoked); an unknown name is inactive. It is how a
// holder of state bound to a credential (an owner question) checks it on
// every use.
func (s *Store) CredentialGeneration(ctx context.Context, name string) (int, bool, error) {
	var gen int
	var revoked sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT generation, revoked_at FROM auth_credentials WHERE name = ?`, name).Scan(&gen, &revoked)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("auth: credential %s: %w", name, err)
	}
	return gen, !revoked.Valid, nil
}
