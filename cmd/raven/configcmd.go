package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/config"
)

const configValueHelp = `Every key of the schema is reachable, optional ones included; "raven config
list" prints them all with their type, default and effective value.

VALUE is read by the key's type:
  bool            true | false
  int, number     42, 0.75
  string          taken verbatim ("" for empty)
  duration        90s, 30m, 1h30m
  HH:MM           23:00
  list of T       comma-separated items: telegram:123,webhook:x
                  or a JSON array when an item holds a comma: '["a,b","c"]'
                  "" is the empty list
  JSON            the JSON text itself (lists of objects and maps, e.g.
                  sentinel.policy.persona_dnd '[{"start":"09:00","end":"10:00"}]')`

func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Read or change config.json by dotted key (e.g. sentinel.enabled)",
		Long:  "Read or change config.json by dotted key (e.g. sentinel.enabled).\n\n" + configValueHelp,
	}
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "Print every key with its type, default and effective value (secrets masked)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			return printKeys(cmd.OutOrStdout(), cfg, listJSON)
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print the keys as JSON")
	set := &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Set KEY to VALUE after validating the whole file; nothing is written on error",
		Long:  "Set KEY to VALUE after validating the whole file; nothing is written on error.\n\n" + configValueHelp,
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			if err := config.Set(p.Config(), args[0], args[1]); err != nil {
				return usageErr(err)
			}
			return printSet(cmd.OutOrStdout(), p.Config(), args[0])
		},
	}
	// A negative VALUE (sentinel.policy.day_quota -1) is a value, not a
	// flag: flags end at KEY.
	set.Flags().SetInterspersed(false)
	cmd.AddCommand(&cobra.Command{
		Use:   "get KEY",
		Short: "Print the effective value of KEY (defaults included); a section prints all its keys",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, cfg, err := g.loadConfig()
			if err != nil {
				return err
			}
			if k, err := config.LookupKey(args[0]); err == nil {
				fmt.Fprintln(cmd.OutOrStdout(), k.Text(cfg))
				return nil
			}
			v, err := config.Get(cfg, args[0])
			if err != nil {
				return usageErr(err)
			}
			return printJSON(cmd.OutOrStdout(), v)
		},
	}, set, &cobra.Command{
		Use:   "unset KEY",
		Short: "Remove KEY from config.json so its default applies again",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			if err := config.Unset(p.Config(), args[0]); err != nil {
				return usageErr(err)
			}
			return printSet(cmd.OutOrStdout(), p.Config(), args[0])
		},
	}, list, &cobra.Command{
		Use:   "path",
		Short: "Print the config file's path",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := g.paths()
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), p.Config())
			return nil
		},
	})
	return cmd
}

// printSet prints the key's value as the reloaded file now gives it, so the
// owner sees what was stored, not what was typed.
func printSet(w io.Writer, path, key string) error {
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	k, err := config.LookupKey(key)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s = %s\n", key, shown(k, k.Text(cfg), true))
	return nil
}

// shown renders a value for a human: empty strings visible, secrets masked.
func shown(k config.Key, text string, mask bool) string {
	switch {
	case mask && k.Secret && text != "":
		return "(set, hidden)"
	case text == "" && k.Type == "string":
		return `""`
	}
	return text
}

type keyRow struct {
	Key     string          `json:"key"`
	Type    string          `json:"type"`
	Default json.RawMessage `json:"default"`
	Value   json.RawMessage `json:"value"`
	Secret  bool            `json:"secret,omitempty"`
}

func printKeys(w io.Writer, cfg config.Config, asJSON bool) error {
	def := config.Default()
	keys := config.Keys()
	if asJSON {
		rows := make([]keyRow, 0, len(keys))
		for _, k := range keys {
			r := keyRow{Key: k.Name, Type: k.Type, Default: k.JSON(def), Value: k.JSON(cfg), Secret: k.Secret}
			if k.Secret && k.Text(cfg) != "" {
				r.Value = json.RawMessage(`"(set, hidden)"`)
			}
			rows = append(rows, r)
		}
		return printJSON(w, rows)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tTYPE\tDEFAULT\tVALUE")
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.Name, k.Type, shown(k, k.Text(def), true), shown(k, k.Text(cfg), true))
	}
	return tw.Flush()
}
