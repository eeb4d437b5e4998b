// Package sim runs Raven's virtual-clock scenarios: the `raven demo` day that
// drives the real runtime (spine, agent, Sentinel, cron, …) with scripted model turns.
package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Options configure a demo run.
type Options struct {
	// JSON prints events as JSON lines instead of the readable timeline.
	JSON bool
	// Keep leaves the data directory in place (its path is printed).
	Keep bool
	// Section runs only the named section (see SectionNames).
	Section string
	// Dir is the parent of the temporary data directory (default os.TempDir).
	Dir string
	// Logger receives the runtime's own logs (default: discarded, so the
	// timeline stays readable).
	Logger *slog.Logger
	// StepTimeout bounds waiting for one asynchronous step (a delivery, a
	// turn) in real time; default 10s. The demo never sleeps: it waits on
	// events, and this only turns a broken path into an error.
	StepTimeout time.Duration
}

// section is one chapter of the demo.
type section struct {
	name  string
	title string
	blurb string
	run   func(ctx context.Context, e *env) error
}

func sections() []section {
	return []section{foundationSection, sentinelSection, discoverySection, policySection, cronSection, outboxSection, askUserSection, ownerQuestionSection, webhookSection, webSection, mcpSection, skillsSection, streamingSection}
}

// SectionNames lists the sections in running order.
func SectionNames() []string {
	var out []string
	for _, s := range sections() {
		out = append(out, s.name)
	}
	return out
}

// ErrUnknownSection is returned for a --section name that does not exist.
var ErrUnknownSection = errors.New("sim: unknown section")

// Run plays the demo into w. It returns the events it emitted.
func Run(ctx context.Context, w io.Writer, o Options) ([]Event, error) {
	all := sections()
	if o.Section != "" {
		var pick []section
		for _, s := range all {
			if s.name == o.Section {
				pick = append(pick, s)
			}
		}
		if len(pick) == 0 {
			return nil, fmt.Errorf("%w %q (want one of %s)", ErrUnknownSection, o.Section, strings.Join(SectionNames(), ", "))
		}
		all = pick
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 10 * time.Second
	}
	root, err := os.MkdirTemp(o.Dir, "raven-demo-")
	if err != nil {
		return nil, fmt.Errorf("sim: data dir: %w", err)
	}
	if !o.Keep {
		defer os.RemoveAll(root)
	}
	tl := newTimeline(w, o.JSON)
	if !o.JSON {
		tl.printf("Raven demo — one scripted day on a virtual clock.\n")
		tl.printf("Every model reply comes from a script (no model; nothing leaves the machine); everything\n")
		tl.printf("else is Raven's real runtime, assembled by runtime.Build with the default config (as\n")
		tl.printf("`raven gateway` is): spine, agent loop, tools, Sentinel and its policy, cron, heartbeat,\n")
		tl.printf("the outbox, the ask_user broker, channels (the webhook on 127.0.0.1 only).\n")
		tl.printf("Legend: → message delivered   ⚑ Raven reached out on its own   ↳ why it happened\n")
		if o.Keep {
			tl.printf("Data dir (kept): %s\n", root)
		}
	}
	start := time.Now()
	for _, s := range all {
		tl.heading(s.name, fmt.Sprintf("%d · %s", indexOf(s.name)+1, s.title), s.blurb)
		e, err := newEnv(ctx, root, s.name, tl, o)
		if err != nil {
			return tl.Events(), fmt.Errorf("sim: section %s: %w", s.name, err)
		}
		err = s.run(ctx, e)
		if cerr := e.close(); err == nil {
			err = cerr
		}
		if err != nil {
			return tl.Events(), fmt.Errorf("sim: section %s: %w", s.name, err)
		}
	}
	if !o.JSON {
		tl.printf("\nDone: %d events in %s of real time.", len(tl.Events()), time.Since(start).Round(time.Millisecond))
		if o.Keep {
			tl.printf(" Data kept in %s\n", root)
		} else {
			tl.printf(" Temporary data removed (--keep to inspect it).\n")
		}
	}
	return tl.Events(), tl.failed()
}

func indexOf(name string) int {
	for i, s := range sections() {
		if s.name == name {
			return i
		}
	}
	return 0
}
