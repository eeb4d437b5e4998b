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
	"github.com/raven-agent/raven/internal/chat"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

// newAuthCmd is `raven auth …`: credential management on raven.db. revoke
// and rotate go through a running gateway's control API (auth.revoke,
// auth.rotate) and work on the database only when none runs.
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

// dialAuthGateway connects to the running gateway as the data dir's
// operator, or returns nil when none runs: a credential change must then
// happen inside the gateway, whose auth store cancels the owner questions
// and whose event log pushes their input_resolved events to live
// subscribers at once.
func dialAuthGateway(cmd *cobra.Command, g *globals) (*controlapi.Client, error) {
	p, err := g.paths()
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	defer cancel()
	c, err := chat.DialGateway(dctx, p.Socket(), p.OperatorToken())
	switch {
	case err == nil:
		fmt.Fprintf(cmd.ErrOrStderr(), "raven: via the gateway on %s\n", p.Socket())
		return c, nil
	case errors.Is(err, chat.ErrNoGateway):
		return nil, nil
	case controlapi.IsCode(err, controlapi.CodeUnauthorized):
		return nil, &exitError{code: exitNotAllowed, err: fmt.Errorf("auth: the gateway refused the operator token in %s: %w", p.OperatorToken(), err)}
	}
	// Something listens but would not let us in: changing the database
	// behind a live gateway would leave its subscribers uninformed.
	return nil, fmt.Errorf("auth: %w", err)
}

// authRPCErr gives a gateway refusal the exit code the direct mode gives.
func authRPCErr(err error) error {
	switch {
	case controlapi.IsCode(err, controlapi.CodeNotFound), controlapi.IsCode(err, controlapi.CodeInvalidParams),
		controlapi.IsCode(err, controlapi.CodeConflict):
		return usageErr(err)
	case controlapi.IsCode(err, controlapi.CodeMethodNotFound):
		return fmt.Errorf("auth: the running gateway does not serve credential changes (it is older than this raven; restart it): %w", err)
	case controlapi.IsCode(err, controlapi.CodeForbidden), controlapi.IsCode(err, controlapi.CodeUnauthorized):
		return &exitError{code: exitNotAllowed, err: err}
	}
	return fmt.Errorf("auth: gateway: %w", err)
}

// rotateCredential rotates name through the running gateway, or on the
// database when none runs, and returns the new token.
func rotateCredential(cmd *cobra.Command, g *globals, name string) (string, error) {
	c, err := dialAuthGateway(cmd, g)
	if err != nil {
		return "", err
	}
	if c != nil {
		defer c.Close()
		res, err := controlapi.Invoke(cmd.Context(), c, api.AuthRotate, api.AuthNameParams{Name: name})
		if err != nil {
			return "", authRPCErr(err)
		}
		return res.Token, nil
	}
	s, db, err := openAuthStore(cmd.Context(), g)
	if err != nil {
		return "", err
	}
	defer db.Close()
	release, err := hookOwnerQuestions(cmd.Context(), s, db)
	if err != nil {
		return "", err
	}
	defer release()
	tok, err := s.Rotate(cmd.Context(), name)
	if err != nil {
		return "", authErr(err)
	}
	return tok, nil
}

func newAuthRevokeCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a credential (through the running gateway when one runs): refused from the next call, its owner questions cancelled at once",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := dialAuthGateway(cmd, g)
			if err != nil {
				return err
			}
			if c != nil {
				defer c.Close()
				if _, err := controlapi.Invoke(cmd.Context(), c, api.AuthRevoke, api.AuthNameParams{Name: args[0]}); err != nil {
					return authRPCErr(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %q\n", args[0])
				return nil
			}
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
			tok, err := rotateCredential(cmd, g, args[0])
			if err != nil {
				return err
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
