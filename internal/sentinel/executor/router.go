package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"

	"github.com/raven-agent/raven/internal/llm"
)

// Match is a reply recognised as an answer to a pending decision.
type Match struct {
	Index      int     `json:"index,omitempty"` // 1-based option; 0 for confirm/cancel
	Confirm    bool    `json:"confirm,omitempty"`
	Cancel     bool    `json:"cancel,omitempty"`
	Via        string  `json:"via"` // "deterministic" or "classifier"
	Confidence float64 `json:"confidence"`
}

// RouterOptions configure the DecisionRouter.
type RouterOptions struct {
	// Provider, when set, classifies replies the deterministic rules miss.
	Provider llm.Provider
	Model    string
	// MinConfidence a classifier pick needs (default 0.7).
	MinConfidence float64
	// MaxClassifyLen: longer replies are never sent to the classifier
	// (default 200 bytes); a long message is a conversation, not a pick.
	MaxClassifyLen int
	Logger         *slog.Logger
}

// DecisionRouter recognises picks. Deterministic matching ("2", "/pick 2")
// runs first and always wins; the LLM classifier is only a fallback.
type DecisionRouter struct {
	o RouterOptions
}

// NewRouter returns a router.
func NewRouter(opts RouterOptions) *DecisionRouter {
	if opts.MinConfidence <= 0 {
		opts.MinConfidence = 0.7
	}
	if opts.MaxClassifyLen <= 0 {
		opts.MaxClassifyLen = 200
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &DecisionRouter{o: opts}
}

var pickRe = regexp.MustCompile(`^(?:/pick\s*|#|option\s*|number\s*|no\.?\s*)?(\d{1,3})\s*[.)!]?$`)

var confirmWords = map[string]bool{"yes": true, "y": true, "ok": true, "okay": true, "confirm": true, "/confirm": true, "sure": true, "go": true, "go ahead": true, "do it": true, "yep": true, "yes please": true}
var cancelWords = map[string]bool{"no": true, "n": true, "cancel": true, "/cancel": true, "stop": true, "nevermind": true, "never mind": true, "nope": true, "no thanks": true}

// MatchDeterministic applies the exact rules only.
func MatchDeterministic(pd PendingDecision, reply string) (Match, bool) {
	s := strings.ToLower(strings.TrimSpace(reply))
	s = strings.TrimRight(s, " .!")
	if pd.State == StateAwaitingConfirm {
		if confirmWords[s] {
			return Match{Confirm: true, Via: "deterministic", Confidence: 1}, true
		}
		if cancelWords[s] {
			return Match{Cancel: true, Via: "deterministic", Confidence: 1}, true
		}
	}
	if s == "/cancel" {
		return Match{Cancel: true, Via: "deterministic", Confidence: 1}, true
	}
	m := pickRe.FindStringSubmatch(s)
	if m == nil {
		return Match{}, false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n < 1 || n > len(pd.Options) {
		return Match{}, false
	}
	return Match{Index: n, Via: "deterministic", Confidence: 1}, true
}

// Route returns the pick the reply makes, if any.
func (r *DecisionRouter) Route(ctx context.Context, pd PendingDecision, reply string) (Match, bool) {
	if m, ok := MatchDeterministic(pd, reply); ok {
		return m, true
	}
	if r.o.Provider == nil || len(strings.TrimSpace(reply)) == 0 || len(reply) > r.o.MaxClassifyLen {
		return Match{}, false
	}
	m, ok, err := r.classify(ctx, pd, reply)
	if err != nil {
		r.o.Logger.Warn("sentinel: pick classifier failed; reply goes to the agent", "err", err)
		return Match{}, false
	}
	if !ok || m.Confidence < r.o.MinConfidence {
		return Match{}, false
	}
	return m, true
}

const classifyTool = "classify_pick"

func (r *DecisionRouter) classify(ctx context.Context, pd PendingDecision, reply string) (Match, bool, error) {
	temp := 0.0
	var menu strings.Builder
	for i, o := range pd.Options {
		fmt.Fprintf(&menu, "%d. %s\n", i+1, o.Title)
	}
	sys := "The owner was offered a numbered menu and then wrote a message. Decide whether the message picks one option. " +
		"Use option 0 when it does not clearly pick one (a new question, small talk, or ambiguity)."
	if pd.State == StateAwaitingConfirm {
		sys += " The owner was also asked to confirm option " + strconv.Itoa(pd.Picked) + "; use confirm or cancel when the message answers that."
	}
	resp, err := r.o.Provider.Chat(llm.WithCallTag(ctx, llm.CallTag{Origin: llm.OriginRouter}), llm.Request{
		Model: r.o.Model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: sys},
			{Role: llm.RoleUser, Content: "Menu:\n" + menu.String() + "\nMessage: " + reply},
		},
		Tools: []llm.Tool{{
			Name: classifyTool, Description: "Report which option the message picks.",
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"option":     map[string]any{"type": "integer", "minimum": 0},
					"confirm":    map[string]any{"type": "boolean"},
					"cancel":     map[string]any{"type": "boolean"},
					"confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1},
				},
				"required": []any{"option", "confidence"},
			},
		}},
		ToolChoice:  classifyTool,
		MaxTokens:   128,
		Temperature: &temp,
		NoReasoning: true,
	})
	if err != nil {
		return Match{}, false, err
	}
	for _, c := range resp.ToolCalls {
		if c.Name != classifyTool {
			continue
		}
		var args struct {
			Option     *int     `json:"option"`
			Confirm    bool     `json:"confirm"`
			Cancel     bool     `json:"cancel"`
			Confidence *float64 `json:"confidence"`
		}
		if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil || args.Option == nil || args.Confidence == nil {
			return Match{}, false, fmt.Errorf("classifier returned unusable arguments %q", c.Arguments)
		}
		m := Match{Index: *args.Option, Via: "classifier", Confidence: min(max(*args.Confidence, 0), 1)}
		if pd.State == StateAwaitingConfirm && (args.Confirm || args.Cancel) {
			m.Index, m.Confirm, m.Cancel = 0, args.Confirm, args.Cancel && !args.Confirm
			return m, true, nil
		}
		if m.Index < 1 || m.Index > len(pd.Options) {
			return Match{}, false, nil
		}
		return m, true, nil
	}
	return Match{}, false, fmt.Errorf("classifier made no %s call", classifyTool)
}
