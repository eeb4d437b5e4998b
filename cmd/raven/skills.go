package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/skills"
)

func newSkillsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skills",
		Short: "List, show, check and install Agent Skills (folders with a SKILL.md)",
		Long: `Skills are folders with a SKILL.md (YAML front matter: name, description,
optional license, compatibility, metadata, allowed-tools; then markdown
instructions) in <data dir>/workspace/skills/ and <data dir>/skills/ (the
workspace wins a name clash). The model sees only names and descriptions and
reads a skill's instructions with use_skill when it picks one. Nothing in a
skill is ever run by installing, listing or reading it.`,
	}
	store := func() (*skills.Store, config.Paths, error) {
		p, err := g.paths()
		if err != nil {
			return nil, p, err
		}
		return skills.NewStore(skills.Roots(p.Workspace(), p.Root), nil), p, nil
	}
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the skills the model can use",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, _, err := store()
			if err != nil {
				return err
			}
			c := st.Catalog()
			if listJSON || g.json {
				out := c.Skills
				if out == nil {
					out = []*skills.Skill{}
				}
				return printJSON(cmd.OutOrStdout(), out)
			}
			if len(c.Skills) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "No skills. Add a folder with a SKILL.md under workspace/skills/, or `raven skills install DIR`.")
			} else {
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tSOURCE\tDESCRIPTION")
				for _, s := range c.Skills {
					fmt.Fprintf(w, "%s\t%s\t%s\n", s.Name, s.Source, oneLineCLI(s.Description, 80))
				}
				w.Flush()
			}
			if n := len(c.Problems); n > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d problem(s) found; see `raven skills check`\n", n)
			}
			return nil
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print the skills as JSON")

	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a skill: its front matter, files and instructions",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, _, err := store()
			if err != nil {
				return err
			}
			sk, body, err := st.Load(args[0])
			if err != nil {
				return usageErr(err)
			}
			files, _, err := skills.Resources(sk)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "name:          %s\n", sk.Name)
			fmt.Fprintf(w, "description:   %s\n", oneLineCLI(sk.Description, skills.MaxDescriptionLen))
			fmt.Fprintf(w, "source:        %s (%s)\n", sk.Source, sk.File)
			for _, kv := range [][2]string{{"license", sk.License}, {"compatibility", sk.Compatibility}, {"allowed-tools", strings.Join(sk.AllowedTools, " ")}} {
				if kv[1] != "" {
					fmt.Fprintf(w, "%-14s %s\n", kv[0]+":", kv[1])
				}
			}
			for _, k := range slices.Sorted(maps.Keys(sk.Metadata)) {
				fmt.Fprintf(w, "metadata:      %s = %s\n", k, sk.Metadata[k])
			}
			if len(files) > 0 {
				fmt.Fprintf(w, "files:         %s\n", strings.Join(files, ", "))
			}
			fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(body))
			return nil
		},
	}

	var checkJSON bool
	check := &cobra.Command{
		Use:   "check",
		Short: "Validate every skill; print file:line problems, exit 1 on errors",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, _, err := store()
			if err != nil {
				return err
			}
			c, problems := st.Check()
			errs := len(skills.Errors(problems))
			if checkJSON || g.json {
				if problems == nil {
					problems = []skills.Problem{}
				}
				if err := printJSON(cmd.OutOrStdout(), map[string]any{"skills": len(c.Skills), "problems": problems}); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					fmt.Fprintln(cmd.OutOrStdout(), p)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d skill(s) usable, %d error(s), %d warning(s)\n", len(c.Skills), errs, len(problems)-errs)
			}
			if errs > 0 {
				return fmt.Errorf("skills check: %d error(s)", errs)
			}
			return nil
		},
	}
	check.Flags().BoolVar(&checkJSON, "json", false, "print the problems as JSON")

	install := &cobra.Command{
		Use:   "install DIR",
		Short: "Validate a skill folder and copy it into <data dir>/skills (nothing in it is run)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			in, err := skills.Install(args[0], p.Root)
			if err != nil {
				if errors.Is(err, skills.ErrExists) {
					return usageErr(err)
				}
				return err
			}
			for _, w := range in.Warnings {
				fmt.Fprintln(cmd.ErrOrStderr(), w)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s → %s (%d file(s), %d bytes); nothing in it was run\n", in.Skill.Name, in.Skill.Dir, in.Files, in.Bytes)
			return nil
		},
	}
	cmd.AddCommand(list, show, check, install)
	return cmd
}
