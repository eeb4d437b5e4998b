package runtime

import (
	"context"

	"github.com/raven-agent/raven/internal/skills"
)

// buildSkills finds the owner's skills (<workspace>/skills, then <data
// dir>/skills), lists their names and descriptions in every turn's system
// prompt, and registers use_skill and read_skill_file, which read the rest
// only when the model picks one. Nothing in a skill runs here: a script in
// one runs only through exec, with its sandbox and approvals.
func (r *Runtime) buildSkills(context.Context, Options) error {
	r.skills = skills.NewStore(skills.Roots(r.paths.Workspace(), r.paths.Root), r.log.With("component", "skills"))
	ts, err := skills.Tools(r.skills)
	if err != nil {
		return err
	}
	for _, t := range ts {
		r.toolReg.Register(t)
	}
	r.agent.AddTurnContext(r.skills.PromptSection)
	return nil
}

// Skills is the skill catalog the agent reads.
func (r *Runtime) Skills() *skills.Store { return r.skills }
