package questions

import (
	"strconv"
	"strings"
)

// Question is one ask_user question.
type Question struct {
	Question string `json:"question"`
	// Header is a short chip label ("Deploy", "Budget").
	Header string `json:"header,omitempty"`
	// Choices offered for a single selection; empty means free-form only.
	Choices []string `json:"choices,omitempty"`
	// Recommended names the choice the agent would pick. It is only a hint:
	// it is never taken as the answer when the owner stays silent.
	Recommended string `json:"recommended,omitempty"`
}

// ClarifyRequest is the clarify.request notification payload. Its field set
// is the ClarifyPrompt wire contract; do not add or rename fields.
type ClarifyRequest struct {
	Question    string   `json:"question"`
	Choices     []string `json:"choices"`
	Header      string   `json:"header"`
	Recommended string   `json:"recommended"`
	// TimeoutS is what is left of the call's shared budget, in seconds.
	TimeoutS int `json:"timeout_s"`
	// Index (0-based) and Total place the question in its call.
	Index int `json:"index"`
	Total int `json:"total"`
	// Batch identifies the ask_user call; clarify.respond may echo it so a
	// reply to an expired call is refused instead of answering a newer one.
	Batch string `json:"batch"`
}

// AnswerStatus says how one question of a call ended.
type AnswerStatus string

const (
	AnswerGiven AnswerStatus = "answered"
	// AnswerTimeout: the call's shared budget ran out first.
	AnswerTimeout AnswerStatus = "timeout"
	// AnswerSuperseded: a newer ask_user call on the conversation replaced it.
	AnswerSuperseded AnswerStatus = "superseded"
	// AnswerCancelled: the turn ended (interrupt, shutdown) while waiting.
	AnswerCancelled AnswerStatus = "cancelled"
)

// Answer is the outcome of one question.
type Answer struct {
	Index    int          `json:"index"`
	Question string       `json:"question"`
	Status   AnswerStatus `json:"status"`
	// Choice is the selected label; ChoiceIndex is its 0-based index, or -1.
	Choice      string `json:"choice,omitempty"`
	ChoiceIndex int    `json:"choice_index"`
	// Text is the free-form answer, or a note given beside a selection.
	Text string `json:"text,omitempty"`
}

// validateQuestions bounds one call.
func validateQuestions(qs []Question) error {
	if len(qs) == 0 {
		return invalid("at least one question is required")
	}
	if len(qs) > MaxBatchQuestions {
		return invalid("at most %d questions per call", MaxBatchQuestions)
	}
	for i, q := range qs {
		field := "questions[" + strconv.Itoa(i) + "]"
		if err := checkString(field+".question", strings.TrimSpace(q.Question), MaxQuestionLen, true); err != nil {
			return err
		}
		if err := checkString(field+".header", q.Header, MaxHeaderLen, false); err != nil {
			return err
		}
		if len(q.Choices) > MaxOptions {
			return invalid("%s: at most %d choices", field, MaxOptions)
		}
		seen := make(map[string]bool, len(q.Choices))
		for j, c := range q.Choices {
			if err := checkString(field+".choices["+strconv.Itoa(j)+"]", strings.TrimSpace(c), MaxOptionLen, true); err != nil {
				return err
			}
			k := strings.ToLower(strings.TrimSpace(c))
			if seen[k] {
				return invalid("%s: duplicate choice %q", field, c)
			}
			seen[k] = true
		}
		if q.Recommended != "" && choiceIndex(q.Choices, q.Recommended) < 0 {
			return invalid("%s.recommended must be one of the choices", field)
		}
	}
	return nil
}

func choiceIndex(choices []string, label string) int {
	l := strings.TrimSpace(label)
	for i, c := range choices {
		if strings.EqualFold(strings.TrimSpace(c), l) {
			return i
		}
	}
	return -1
}

// parseChannelAnswer reads an inbound chat message as an answer: a number
// or a choice label picks; any other text is the free-form answer. A message
// starting with "/" is a command, never an answer.
func parseChannelAnswer(q Question, text string) (Answer, error) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "/") {
		return Answer{}, newErr(CodeNotAnswer, "", "a /command is not an answer")
	}
	if t == "" {
		return Answer{}, invalid("empty answer")
	}
	if len(t) > MaxAnswerTextLen {
		return Answer{}, invalid("answer longer than %d bytes", MaxAnswerTextLen)
	}
	a := Answer{Question: q.Question, Status: AnswerGiven, ChoiceIndex: -1}
	if n, err := strconv.Atoi(t); err == nil && n >= 1 && n <= len(q.Choices) {
		a.ChoiceIndex, a.Choice = n-1, q.Choices[n-1]
		return a, nil
	}
	if i := choiceIndex(q.Choices, t); i >= 0 {
		a.ChoiceIndex, a.Choice = i, q.Choices[i]
		return a, nil
	}
	a.Text = t
	return a, nil
}
