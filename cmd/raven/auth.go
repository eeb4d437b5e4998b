package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// newAuthCmd is `raven auth …`: credential management straight on raven.db
// (no gateway needed; SQLite's busy timeout covers a running gateway).
func newAuthCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Manage control API credentials (operator, device, captain)",
	}
	cmd.AddCommand(newAuthCreateCmd(g), newAuthListCmd(g), newAuthRevokeCmd(g), newAuthRotateCmd(g))
	return cmd
}

// openAuthStore opens raven.db and the credential store; close the DB when done.
func openAuthStore(ctx context.Context, g *globals) (*auth.Store, *sql.DB, error) {
	p, err := g.paths()
	if err != nil {
		return nil, nil, err
	}
	db, err := sqlitedb.Open(p.DB())
	if err != nil {
		return nil, nil, err
	}
	s, err := auth.NewStore(ctx, db, clock.Real())
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return s, db, nil
}

// authErr turns bad input into a usage error (exit 2).
func authErr(err error) error {
	if errors.Is(err, auth.ErrInvalid) || errors.Is(err, auth.ErrExists) || errors.Is(err, auth.ErrNotFound) {
		return usageErr(err)
	}
	return err
}

func newAuthCreateCmd(g *globals) *cobra.Command {
	var role, name string
	var readOnly bool
	cmd := &cobra.Command{
		Use:   "create --role ROLE --name NAME [--read-only]",
		Short: "Create a credential and print its token once",
		Long: "Create a credential. The token is printed once and only its hash is stored.\n" +
			"Roles: operator (full authority), device (control, or --read-only), captain (automation: read only, never answers).",
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if role == "" || name == "" {
				return usageErr(errors.New("auth create: --role and --name are required"))
			}
			s, db, err := openAuthStore(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer db.Close()
			tok, err := s.Create(cmd.Context(), auth.Role(role), name, readOnly)
			if err != nil {
				return authErr(err)
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), map[string]string{"name": name, "role": role, "token": tok})
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			fmt.Fprintf(cmd.ErrOrStderr(), "created %s %q; the token above is shown only once\n", role, name)
			return nil
		},
	}
	cmd.Flags().StringVar(&role, "role", "", "operator, device or captain")
	cmd.Flags().StringVar(&name, "name", "", "unique credential name")
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "device may read but not take control")
	cmd.Flags().BoolVar(&g.json, "json", false, "print JSON")
	return cmd
}

func newAuthListCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List credentials (never their tokens)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, db, err := openAuthStore(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer db.Close()
			creds, err := s.List(cmd.Context())
			if err != nil {
				return err
			}
			if g.json {
				if creds == nil {
					creds = []auth.Credential{}
				}
				return printJSON(cmd.OutOrStdout(), creds)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROLE\tACCESS\tGEN\tCREATED\tSTATUS")
			for _, c := range creds {
				access := "control"
				switch {
				case c.Role == auth.RoleOperator:
					access = "full"
				case c.Role == auth.RoleCaptain || c.ReadOnly:
					access = "read-only"
				}
				status := "active"
				if c.Revoked() {
					status = "revoked " + c.RevokedAt.Local().Format(time.DateTime)
				} else if !c.RotatedAt.IsZero() {
					status = "rotated " + c.RotatedAt.Local().Format(time.DateTime)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", c.Name, c.Role, access, c.Generation, c.CreatedAt.Local().Format(time.DateTime), status)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&g.json, "json", false, "print JSON")
	return cmd
}

func newAuthRevokeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a credential; a running gateway refuses it from the next call",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, db, err := openAuthStore(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer db.Close()
			release, err := hookOwnerQuestions(cmd.Context(), s, db)
			if err != nil {
				return err
			}
			defer release()
			if err := s.Revoke(cmd.Context(), args[0]); err != nil {
				return authErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "revoked %q\n", args[0])
			return nil
		},
	}
}

func newAuthRotateCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rotate NAME",
		Short: "Replace a credential's token and print the new one once",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, db, err := openAuthStore(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer db.Close()
			release, err := hookOwnerQuestions(cmd.Context(), s, db)
			if err != nil {
				return err
			}
			defer release()
			tok, err := s.Rotate(cmd.Context(), args[0])
			if err != nil {
				return authErr(err)
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), map[string]string{"name": args[0], "token": tok})
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			fmt.Fprintf(cmd.ErrOrStderr(), "rotated %q; the old token is refused from now on\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&g.json, "json", false, "print JSON")
	return cmd
}
