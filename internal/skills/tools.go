package skills

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/raven-agent/raven/internal/tools"
)

// Tool names.
const (
	UseToolName  = "use_skill"
	ReadToolName = "read_skill_file"
)

// UseArgs are use_skill's arguments.
type UseArgs struct {
	Name string `json:"name" jsonschema:"the skill's name, as listed under Skills in the system prompt"`
}

// ReadArgs are read_skill_file's arguments.
type ReadArgs struct {
	Name string `json:"name" jsonschema:"the skill's name"`
	Path string `json:"path" jsonschema:"a file inside the skill folder, as use_skill listed it (e.g. references/forms.md)"`
}

// Tools are use_skill and read_skill_file over s. They are offered to the
// model only while at least one skill exists.
func Tools(s *Store) ([]tools.Tool, error) {
	use, err := tools.New(UseToolName,
		"Read a skill's instructions (the body of its SKILL.md) and the list of its other files. Call it when a task matches a skill listed under Skills in the system prompt, before doing the task.",
		s.use)
	if err != nil {
		return nil, err
	}
	read, err := tools.New(ReadToolName,
		"Read one file of a skill's folder (a reference or a script's source), as use_skill listed it. Reading never runs anything.",
		s.read)
	if err != nil {
		return nil, err
	}
	return []tools.Tool{offered{use, s}, offered{read, s}}, nil
}

// offered hides the skill tools from the model while there are no skills.
type offered struct {
	tools.Tool
	s *Store
}

// OfferedIn reuses the catalog the turn's system prompt was just built
// from (PromptSection runs first), so offering costs no second look.
func (o offered) OfferedIn(context.Context, string) bool { return len(o.s.recent().Skills) > 0 }

func (s *Store) use(_ context.Context, a UseArgs) (string, error) {
	sk, body, err := s.Load(a.Name)
	if err != nil {
		return "", err
	}
	files, _, err := Resources(sk)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %s (%s skill): %d file(s) besides SKILL.md, then its instructions.\n", sk.Name, sk.Source, len(files))
	if len(sk.AllowedTools) > 0 {
		fmt.Fprintf(&b, "Tools this skill expects to use: %s. This is advice from the skill, not a permission: your tools and their approvals apply as always.\n",
			strings.Join(sk.AllowedTools, " "))
	}
	if sk.Compatibility != "" {
		fmt.Fprintf(&b, "Needs: %s\n", sk.Compatibility)
	}
	if len(files) > 0 {
		fmt.Fprintf(&b, "Files in the folder (read one with %s):\n", ReadToolName)
		for _, f := range files {
			b.WriteString("  " + f + "\n")
		}
		b.WriteString("Reading a script never runs it. Run one only if the task needs it, with the exec tool")
		if sk.Source == SourceWorkspace {
			// exec runs in the workspace, so the folder's workspace path is the one that works.
			fmt.Fprintf(&b, ", from skills/%s/ (exec runs in the workspace).\n", filepath.Base(sk.Dir))
		} else {
			// exec's sandbox never sees the data dir, where installed skills live.
			b.WriteString("; this skill is installed outside the workspace, where exec cannot reach, so copy a script into the workspace first (read_skill_file, then write_file).\n")
		}
	}
	b.WriteString("\n--- instructions ---\n")
	b.WriteString(strings.TrimSpace(body))
	b.WriteString("\n")
	return b.String(), nil
}

func (s *Store) read(_ context.Context, a ReadArgs) (string, error) {
	sk, ok := s.Catalog().Get(a.Name)
	if !ok {
		return "", fmt.Errorf("%w %q", ErrNotFound, a.Name)
	}
	return ReadResource(sk, a.Path)
}

// PromptSection is the system prompt's list of skills: names and
// descriptions only, bounded by MaxIndexBytes; "" without skills. It has
// the shape of agent.TurnContext, which is how the runtime wires it.
func (s *Store) PromptSection(context.Context, string) string {
	c := s.Catalog()
	if len(c.Skills) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Skills\n")
	fmt.Fprintf(&b, "Skills are instructions for particular tasks. When a request matches a skill's description, call %s with its name first and follow what it says; %s reads the other files it mentions.\n",
		UseToolName, ReadToolName)
	for i, sk := range c.Skills {
		line := "- " + sk.Name + ": " + strings.Join(strings.Fields(sk.Description), " ") + "\n"
		if b.Len()+len(line) > MaxIndexBytes {
			fmt.Fprintf(&b, "- … %d more skills not listed (the list is bounded); %s takes any skill's name.\n", len(c.Skills)-i, UseToolName)
			break
		}
		b.WriteString(line)
	}
	return b.String()
}
