// Package skills finds, validates and serves Agent Skills (a folder with a
// SKILL.md of YAML front matter and markdown instructions) to the agent loop.
package skills

import (
	"errors"
	"fmt"
)

// Bounds of what a skill may hold. A skill is instructions for a model, so
// these are generous for text and refuse what could only be a mistake or an
// attack on the prompt.
const (
	// MaxNameLen and MaxDescriptionLen are the format's own limits;
	// MaxCompatibilityLen too.
	MaxNameLen          = 64
	MaxDescriptionLen   = 1024
	MaxCompatibilityLen = 500
	// MaxSkillFileBytes bounds SKILL.md (front matter and body).
	MaxSkillFileBytes = 256 << 10
	// MaxFrontMatterBytes bounds the front matter inside it.
	MaxFrontMatterBytes = 16 << 10
	// MaxResourceBytes bounds one file read_skill_file returns.
	MaxResourceBytes = 256 << 10
	// MaxResources bounds the resource files use_skill lists.
	MaxResources = 200
	// MaxSkills bounds the skills one directory contributes.
	MaxSkills = 200
	// MaxIndexBytes bounds the skills section of the system prompt.
	MaxIndexBytes = 16 << 10
	// MaxInstallBytes and MaxInstallFiles bound a folder `raven skills
	// install` copies.
	MaxInstallBytes = 32 << 20
	MaxInstallFiles = 2000
)

// FileName is the file that makes a folder a skill.
const FileName = "SKILL.md"

// Source says where a skill was found.
type Source string

const (
	// SourceWorkspace is <workspace>/skills: the owner's (and the agent's)
	// working skills; they win a name clash.
	SourceWorkspace Source = "workspace"
	// SourceData is <data dir>/skills: where `raven skills install` puts them.
	SourceData Source = "data"
)

// Skill is one validated SKILL.md. The body is not kept: the prompt only
// ever needs the name and description, and use_skill reads the body fresh.
type Skill struct {
	Name          string            `json:"name"`
	Description   string            `json:"description"`
	License       string            `json:"license,omitempty"`
	Compatibility string            `json:"compatibility,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	// AllowedTools are the tools the skill says it needs (the format's
	// experimental allowed-tools); Raven shows them, it grants nothing.
	AllowedTools []string `json:"allowed_tools,omitempty"`
	Source       Source   `json:"source"`
	// Dir is the skill folder; File its SKILL.md.
	Dir  string `json:"dir"`
	File string `json:"file"`
	// BodyLine is the line of SKILL.md the markdown body starts on.
	BodyLine int `json:"-"`
}

// Severity of a Problem.
type Severity string

const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Problem is one finding about a SKILL.md, with the line it is on (0: the
// file as a whole). An error keeps the skill out; a warning does not.
type Problem struct {
	File     string   `json:"file"`
	Line     int      `json:"line,omitempty"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	// Err is the sentinel the problem is an instance of (errors.Is).
	Err error `json:"-"`
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Severity, p.Message)
	}
	return fmt.Sprintf("%s: %s: %s", p.File, p.Severity, p.Message)
}

// Error makes an error Problem usable as an error wrapping its sentinel.
func (p Problem) Error() string { return p.String() }
func (p Problem) Unwrap() error { return p.Err }

// The kinds of problem, for errors.Is.
var (
	ErrNoFrontMatter = errors.New("skills: no front matter")
	ErrSyntax        = errors.New("skills: front matter is not valid YAML")
	ErrInvalid       = errors.New("skills: invalid front matter")
	ErrTooLarge      = errors.New("skills: too large")
	ErrUnknownKey    = errors.New("skills: unknown front matter key")
	ErrNameClash     = errors.New("skills: name defined twice")
	ErrEscapes       = errors.New("skills: path outside the skill folder")
	ErrNotFound      = errors.New("skills: no such skill")
	ErrNotRegular    = errors.New("skills: not a regular file")
	ErrExists        = errors.New("skills: skill already installed")
)

// Errors returns the error-severity problems of ps.
func Errors(ps []Problem) []Problem {
	var out []Problem
	for _, p := range ps {
		if p.Severity == SeverityError {
			out = append(out, p)
		}
	}
	return out
}
