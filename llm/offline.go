package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// OfflineLabel ends every answer the offline provider writes, so that no one
// takes it for a language model's.
const OfflineLabel = "(offline model)"

// OfflineModel is the model name the offline provider reports.
const OfflineModel = "offline-rules"

// Offline is the rule-based [Provider] for a machine with no model. It is
// deterministic: the same request always gets the same answer.
//
// It reads the last user message as the request. It calls the tool whose
// name or description shares the most words with the request (with
// synonyms: "plus" and "sum" mean add, "times" multiply, "show" read,
// "remember" and "note" as a verb write, ...; "what is in notes.txt" asks
// to read it; the server's part of "files/read_file" counts as little as
// the description) and whose required arguments it can fill by meaning: an ISO date
// (2026-12-01) fills a date field (format date or date-time, a name such as
// date, day or when, or a description saying YYYY-MM-DD), the places of
// "from X to Y" fill origin and destination fields and "in X" a city,
// numbers fill number fields in the order of the schema, a filename a path
// field, an enum takes the value the request names, and a quoted text or
// else the request's remaining words (or the text after a colon) fill other
// text fields. When it cannot
// fill a required field it does not guess: it answers which field it could
// not fill, with [FinishIncomplete]. A calculation of several operations
// ("1.5 minus 4 plus 2") is one call per operation, left to right, each
// given the previous result. A directory it lacks, for a tool that works on
// one, it first asks a directory tool such as list_allowed_directories for,
// once; a file it lacks it never makes up. When the tool results are in,
// the answer states them, tool errors in plain words ([PlainToolError]).
// With no matching tool it says that it is the offline model and which
// tools it could use. A conversation it cannot hold.
type Offline struct{}

// NewOffline returns the offline provider.
func NewOffline() *Offline { return &Offline{} }

// Name returns "offline".
func (*Offline) Name() string { return "offline" }

// Model returns [OfflineModel].
func (*Offline) Model() string { return OfflineModel }

// Complete implements [Provider].
func (o *Offline) Complete(ctx context.Context, req Request) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("llm: offline: %w", err)
	}
	return o.answer(req), nil
}

// Stream implements [Provider]: the answer comes word by word, and a tool
// call in one piece.
func (o *Offline) Stream(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("llm: offline: %w", err)
	}
	r := o.answer(req)
	if onDelta == nil {
		return r, nil
	}
	var deltas []Delta
	if r.Reasoning != "" {
		deltas = append(deltas, Delta{Reasoning: r.Reasoning})
	}
	for _, w := range strings.SplitAfter(r.Content, " ") {
		if w != "" {
			deltas = append(deltas, Delta{Content: w})
		}
	}
	for i, tc := range r.ToolCalls {
		deltas = append(deltas, Delta{ToolCall: &ToolCallDelta{Index: i, ID: tc.ID, Name: tc.Name, Arguments: string(tc.Arguments)}})
	}
	for _, d := range deltas {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("llm: offline: %w", err)
		}
		onDelta(d)
	}
	return r, nil
}

// answer is the whole of the offline model.
func (o *Offline) answer(req Request) *Response {
	last := -1
	for i, m := range req.Messages {
		if m.Role == RoleUser {
			last = i
		}
	}
	var r *Response
	switch {
	case last < 0:
		r = &Response{Content: plainAnswer(req.Tools)}
	default:
		t := newTurn(req, last)
		if hasToolResults(t.after) {
			r = t.next()
		} else {
			r = t.plan()
		}
	}
	r.Model = OfflineModel
	if r.FinishReason == "" {
		r.FinishReason = FinishStop
	}
	if len(r.ToolCalls) > 0 {
		r.FinishReason = FinishToolCalls
	}
	r.Usage = estimateUsage(req, r)
	return r
}

func hasToolResults(msgs []Message) bool {
	return slices.ContainsFunc(msgs, func(m Message) bool { return m.Role == RoleTool })
}

// labelled ends an answer with OfflineLabel.
func labelled(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	if strings.Contains(s, "\n") {
		return s + "\n\n" + OfflineLabel
	}
	return s + " " + OfflineLabel
}

// plainAnswer is what the offline model says when no tool fits.
func plainAnswer(tools []Tool) string {
	var b strings.Builder
	b.WriteString("I am the offline rule-based model, not a language model, so I cannot answer that myself. ")
	b.WriteString("I can only call a tool whose name or description matches the request, with the numbers and words in it. ")
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	switch {
	case len(names) == 0:
		b.WriteString("No tools are available to me right now. ")
	case len(names) > 10:
		fmt.Fprintf(&b, "Tools I can use: %s and %d more. ", strings.Join(names[:10], ", "), len(names)-10)
	default:
		fmt.Fprintf(&b, "Tools I can use: %s. ", strings.Join(names, ", "))
	}
	b.WriteString(configureHint)
	return labelled(b.String())
}

const configureHint = "For real answers, configure a model: " + EnvAPIKey + ", or --base-url for a local server."

// candidate is a tool that matches the request.
type candidate struct {
	tool  Tool
	score int
	words []string
}

// candidates are the tools that share at least two points' worth of words
// with the request, best first.
func (q *query) candidates(tools []Tool) []candidate {
	var cands []candidate
	for _, t := range tools {
		score, words := q.score(t)
		if score >= 2 {
			cands = append(cands, candidate{t, score, words})
		}
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if a.score != b.score {
			return b.score - a.score
		}
		return strings.Compare(a.tool.Name, b.tool.Name)
	})
	return cands
}

// call is a response that calls tool with args.
func (t *turn) call(tool Tool, args any, why string) *Response {
	raw, err := json.Marshal(args)
	if err != nil {
		raw = []byte("{}")
	}
	return &Response{
		Reasoning: fmt.Sprintf("%s, so the offline model calls it with %s. %s", why, raw, OfflineLabel),
		ToolCalls: []ToolCall{{ID: "call_offline_" + strconv.Itoa(t.n), Name: tool.Name, Arguments: raw}},
	}
}

// plan chooses a tool for the request and fills its arguments; or, when a
// directory is missing, asks a tool that names the allowed directories
// first; or says which argument it could not fill; or answers plainly.
func (t *turn) plan() *Response {
	if r, ok := t.arithmetic(); ok {
		return r
	}
	cands := t.q.candidates(t.tools)
	dirs := t.knownDirs()
	for _, c := range cands {
		args, missing := t.q.fill(c.tool, dirs)
		if len(missing) > 0 || t.called(c.tool.Name, args) {
			continue
		}
		return t.call(c.tool, args, fmt.Sprintf("The request shares the words %s with the tool %s, and the values come from the request",
			strings.Join(c.words, ", "), c.tool.Name))
	}
	if len(cands) == 0 {
		return &Response{Content: plainAnswer(t.tools)}
	}
	best := cands[0]
	_, missing := t.q.fill(best.tool, dirs)
	if h, ok := t.dirHelper(best.tool, missing); ok {
		return t.call(h, map[string]any{}, fmt.Sprintf("The tool %s needs a directory that the request does not name, and %s tells which directories are allowed",
			best.tool.Name, h.Name))
	}
	return cannotFill(best.tool, missing)
}

// cannotFill says honestly that the tool the request asks for cannot be
// called because the request lacks values for missing.
func cannotFill(tool Tool, missing []schemaProp) *Response {
	descs := make([]string, len(missing))
	for i, p := range missing {
		descs[i] = p.name
		kinds := map[string]string{"number": "a number", "integer": "a whole number", "string": "a text", "boolean": "true or false"}
		if d := strings.TrimRight(p.description, "."); d != "" {
			descs[i] += " (" + d + ")"
		} else if k := kinds[p.typ]; k != "" {
			descs[i] += " (" + k + ")"
		}
	}
	what := "the field " + descs[0]
	if len(descs) > 1 {
		what = "the fields " + strings.Join(descs[:len(descs)-1], ", ") + " and " + descs[len(descs)-1]
	}
	how := `a date as YYYY-MM-DD, places as "from X to Y", numbers as digits`
	if slices.ContainsFunc(missing, func(p schemaProp) bool { return pathish(p.name) }) {
		how = "a file by its name, such as notes.md; " + how
	}
	return &Response{
		Content: labelled(fmt.Sprintf("I am the offline rule-based model. The request calls for the tool %s, but I could not fill %s from it, so I did not call it. "+
			"Say the value in the request (%s), or configure a model: %s, or --base-url for a local server.",
			tool.Name, what, how, EnvAPIKey)),
		FinishReason: FinishIncomplete,
	}
}

// conclude states the results of the tool calls in msgs.
func conclude(msgs []Message) string {
	names := map[string]string{}
	for _, m := range msgs {
		for _, tc := range m.ToolCalls {
			names[tc.ID] = tc.Name
		}
	}
	type result struct {
		name, text string
		failed     bool
	}
	var results []result
	for _, m := range msgs {
		if m.Role != RoleTool {
			continue
		}
		name := names[m.ToolCallID]
		if name == "" {
			name = "the tool"
		}
		text, failed := readToolResult(m.Content)
		if failed {
			text = plainError(text)
		}
		results = append(results, result{name, text, failed})
	}
	if len(results) == 1 {
		r := results[0]
		switch {
		case r.failed:
			return labelled(fmt.Sprintf("%s failed: %s", r.name, sentence(r.text)))
		case r.text == "":
			return labelled(fmt.Sprintf("%s returned nothing.", r.name))
		case isNumber(r.text):
			return labelled("The result is " + sentence(r.text))
		case !strings.Contains(r.text, "\n") && len(r.text) <= 200:
			return labelled(fmt.Sprintf("%s returned: %s", r.name, sentence(r.text)))
		default:
			return labelled(fmt.Sprintf("Here is what %s returned:\n\n%s", r.name, r.text))
		}
	}
	var b strings.Builder
	b.WriteString("Here are the results:")
	for _, r := range results {
		if r.failed {
			r.text = "failed: " + r.text
		}
		fmt.Fprintf(&b, "\n- %s: %s", r.name, r.text)
	}
	return labelled(b.String())
}

// isNumber tells a result that is a number, such as a calculation's; any
// other text, one word of a file included, is said to be what the tool
// returned.
func isNumber(s string) bool {
	_, ok := parseNumber(s)
	return ok
}

// sentence ends s with a full stop unless it ends with punctuation.
func sentence(s string) string {
	if s == "" || strings.ContainsRune(".!?", rune(s[len(s)-1])) {
		return s
	}
	return s + "."
}

// readToolResult finds the text of a tool result, which may be plain text or
// JSON: an MCP result {"content": [{"type": "text", "text": ...}],
// "isError": ...}, {"result": ...}, {"error": ...} or any other value.
func readToolResult(content string) (text string, failed bool) {
	s := strings.TrimSpace(content)
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		switch v := v.(type) {
		case string:
			s = strings.TrimSpace(v)
		case map[string]any:
			if isErr, _ := v["isError"].(bool); isErr {
				failed = true
			}
			if parts, ok := v["content"].([]any); ok {
				var texts []string
				for _, p := range parts {
					if m, ok := p.(map[string]any); ok {
						if t, ok := m["text"].(string); ok {
							texts = append(texts, strings.TrimSpace(t))
						}
					}
				}
				if len(texts) > 0 {
					return strings.Join(texts, "\n"), failed
				}
			}
			for _, key := range []string{"result", "text", "error"} {
				if x, ok := v[key]; ok {
					if key == "error" {
						failed = true
					}
					return jsonText(x), failed
				}
			}
		}
	}
	lower := strings.ToLower(s)
	if strings.HasPrefix(lower, "error") || strings.HasPrefix(lower, "failed") {
		failed = true
	}
	return s, failed
}

// jsonText renders a decoded JSON value as text: strings bare, others as
// JSON.
func jsonText(v any) string {
	if s, ok := v.(string); ok {
		return strings.TrimSpace(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// estimateUsage counts about one token per four characters.
func estimateUsage(req Request, r *Response) Usage {
	prompt := 0
	for _, m := range req.Messages {
		prompt += len(m.Content) + 4
		for _, tc := range m.ToolCalls {
			prompt += len(tc.Name) + len(tc.Arguments)
		}
	}
	for _, t := range req.Tools {
		prompt += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	completion := len(r.Content)
	for _, tc := range r.ToolCalls {
		completion += len(tc.Name) + len(tc.Arguments)
	}
	u := Usage{PromptTokens: (prompt + 3) / 4, CompletionTokens: (completion + 3) / 4}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}
