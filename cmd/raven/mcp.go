package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/raven-agent/raven/internal/mcp"
	"github.com/raven-agent/raven/internal/runtime"
)

func newMCPCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "MCP servers: list them, list a server's tools, call a tool",
	}
	cmd.PersistentFlags().BoolVar(&g.json, "json", false, "print records as JSON")
	cmd.AddCommand(newMCPListCmd(g), newMCPToolsCmd(g), newMCPCallCmd(g))
	return cmd
}

// withMCP builds the runtime (no model, no loops) and runs f with its MCP
// client; the servers f started are stopped on return.
func withMCP(cmd *cobra.Command, g *globals, f func(ctx context.Context, m *mcp.Manager) error) error {
	p, cfg, err := g.loadConfig()
	if err != nil {
		return err
	}
	rt, err := runtime.Build(cmd.Context(), runtime.Options{Paths: p, Config: cfg, NoModel: true,
		Logger: quietLogger(cmd.ErrOrStderr(), cfg)})
	if err != nil {
		return err
	}
	defer rt.Close(context.WithoutCancel(cmd.Context()))
	return f(cmd.Context(), rt.MCP())
}

func newMCPListCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the configured MCP servers and how many tools each is known to have (starts none)",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withMCP(cmd, g, func(_ context.Context, m *mcp.Manager) error {
				st := m.Statuses()
				if g.json {
					return printJSON(cmd.OutOrStdout(), st)
				}
				if len(st) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), `no MCP servers configured (see docs/mcp.md: raven config set mcp.servers '{"NAME":{"command":"..."}}')`)
					return nil
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tTRANSPORT\tTOOLS\tTARGET")
				for _, s := range st {
					tools := fmt.Sprint(s.Tools)
					if s.Tools == 0 {
						tools = "not listed yet"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", s.Name, s.Transport, tools, s.Target)
				}
				return w.Flush()
			})
		},
	}
}

func newMCPToolsCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "tools NAME",
		Short: "Start server NAME and list its tools as the model sees them (NAME__tool)",
		Args:  exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMCP(cmd, g, func(ctx context.Context, m *mcp.Manager) error {
				list, err := m.Tools(ctx, args[0])
				if err != nil {
					return err
				}
				if g.json {
					return printJSON(cmd.OutOrStdout(), list)
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				for _, t := range list {
					d, _, _ := strings.Cut(t.Description, "\n")
					fmt.Fprintf(w, "%s\t%s\n", t.Exposed, d)
				}
				return w.Flush()
			})
		},
	}
}

func newMCPCallCmd(g *globals) *cobra.Command {
	var rawArgs string
	cmd := &cobra.Command{
		Use:   "call NAME TOOL",
		Short: "Call TOOL (the server's own name for it) on server NAME with --args JSON and print the result",
		Args:  exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !json.Valid([]byte(rawArgs)) {
				return usageErr(fmt.Errorf("--args: not valid JSON: %s", rawArgs))
			}
			return withMCP(cmd, g, func(ctx context.Context, m *mcp.Manager) error {
				res, err := m.Call(ctx, args[0], args[1], json.RawMessage(rawArgs))
				if err != nil {
					return err
				}
				if g.json {
					if err := printJSON(cmd.OutOrStdout(), res); err != nil {
						return err
					}
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), res.Text)
				}
				if res.IsError {
					return errors.New("the tool reported an error")
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&rawArgs, "args", "{}", "the tool's arguments as a JSON object")
	return cmd
}
