package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
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
// It reads the last user message as the request (without the @mentions
// that address it), and in this order:
//
//   - An expression and nothing more ("what is 2+3*4", "(2+3)*4", "-3 + 5",
//     "12 times 7 minus 4") is worked out with the usual precedence, one
//     tool call per operation (a tool named for add, subtract, multiply,
//     divide or power that takes two numbers), each given the results it
//     needs; by the model itself, which says so, when a tool is missing. A
//     division by zero is said plainly, never sent.
//   - A request for what only a language model does (it starts with "fix",
//     "explain", "summarize", ..., or asks to write a text it describes,
//     "write a poem to a.txt") is answered by saying that it is beyond the
//     offline model.
//   - A question about the notes ("what did I say about the dentist", "read
//     my notes") lists the notes' folder, reads its text files and answers
//     with the lines about it; "remember that X" with no file named adds
//     "- X" to notes.md, after what the file holds.
//   - Anything else goes to the tool whose name or description shares the
//     most words with the request (with synonyms: "plus" and "sum" mean
//     add, "times" multiply, "show" read, "remember" and "note" as a verb
//     write, ...; "what is in notes.txt" asks to read it, "what files are
//     there" to list them; the server's part of "files/read_file" counts as
//     little as the description), among the tools that do what the request
//     names (a request to write never goes to a tool that does not write),
//     and whose required arguments it can fill by meaning: the text and the
//     file of "write TEXT to FILE" as written, an ISO date (2026-12-01) a
//     date field (format date or date-time, a name such as date, day or
//     when, or a description saying YYYY-MM-DD), the places of "from X to
//     Y" origin and destination fields and "in X" a city, numbers number
//     fields in the order of the schema, a filename a path field, an enum
//     the value the request names, and a quoted text or else the request's
//     remaining words (or the text after a colon) other text fields. When
//     it cannot fill a required field it does not guess: it answers which
//     field it could not fill, with [FinishIncomplete]. A directory it
//     lacks, for a tool that works on one, it first asks a directory tool
//     such as list_allowed_directories for, once; a file it lacks it never
//     makes up.
//
// When the tool results are in, the answer says what the person asked and
// then what came of it: the result, a tool error in plain words
// ([PlainToolError]), or a rejected proposal with who rejected it, the
// reason and their words. With no matching tool it says that it is the
// offline model and which tools it could use. A conversation it cannot
// hold.
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
		r = &Response{Content: beyondAnswer("", req.Tools)}
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

// beyondAnswer is what the offline model says when a request is beyond it:
// no tool fits, or it asks for what only a language model can do (compose,
// fix, explain). asked is the request as askedPrefix restates it.
func beyondAnswer(asked string, tools []Tool) string {
	var b strings.Builder
	if asked != "" {
		b.WriteString(asked + "That is beyond me: I am the offline rule-based model, not a language model. ")
	} else {
		b.WriteString("I am the offline rule-based model, not a language model, so I cannot answer that myself. ")
	}
	b.WriteString("I only call a tool whose name or description says what the request asks, with the values written out (a file by its name, numbers as digits). ")
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

// candidates are the tools that may answer the request: those that match
// it, do what it names when it names a change ("write", "delete", "move",
// "create"), and change nothing when it names none, unless the request
// says a word of the tool's own name other than the things tools work on
// ("right" for the maze's right, not "directory" for create_directory). A
// tool the request names is always one. "write s to s.txt" never goes to
// get_file_info, nor "what's in the folder" to create_directory.
func (t *turn) candidates() []candidate {
	acts := t.q.actions()
	change := slices.ContainsFunc(acts, func(a string) bool { return slices.Contains(mutating, a) })
	return slices.DeleteFunc(t.q.candidates(t.tools), func(c candidate) bool {
		switch {
		case mentions(t.q.text, c.tool.Name):
			return false
		case slices.ContainsFunc(does(c.tool), func(a string) bool { return slices.Contains(acts, a) }):
			return false
		case change:
			return true
		}
		named := slices.ContainsFunc(ownWords(c.tool.Name), func(w string) bool { return t.q.words[w] && w != "file" && w != "directory" })
		return mutates(c.tool) && !named
	})
}

// call is a response that calls tool with args.
func (t *turn) call(tool Tool, args any, why string) *Response {
	raw, _ := json.Marshal(args)
	return &Response{
		Reasoning: fmt.Sprintf("%s, so the offline model calls it with %s. %s", why, raw, OfflineLabel),
		ToolCalls: []ToolCall{t.toolCall(tool, args, -1)},
	}
}

// toolCall is one call of tool with args; i numbers the calls of a
// response that makes several (-1 for one).
func (t *turn) toolCall(tool Tool, args any, i int) ToolCall {
	raw, err := json.Marshal(args)
	if err != nil {
		raw = []byte("{}")
	}
	id := "call_offline_" + strconv.Itoa(t.n)
	if i >= 0 {
		id += "_" + strconv.Itoa(i)
	}
	return ToolCall{ID: id, Name: tool.Name, Arguments: raw}
}

// plan decides what to do with a new request: a calculation, a request
// beyond the model, a question about the notes, a note, or a tool chosen
// for the request with its arguments filled; or, when a directory is
// missing, a tool that names the allowed directories first; or it says
// which argument it could not fill, or that no tool fits.
func (t *turn) plan() *Response {
	for _, plan := range []func() (*Response, bool){t.arithmetic, t.beyond, t.recall, t.noteDown} {
		if r, ok := plan(); ok {
			return r
		}
	}
	cands := t.candidates()
	dirs := t.knownDirs()
	for _, c := range cands {
		if c.score < cands[0].score {
			break // a weaker match is no answer because its arguments are easier to fill
		}
		args, missing := t.q.fill(c.tool, dirs)
		if len(missing) > 0 || t.called(c.tool.Name, args) {
			continue
		}
		return t.call(c.tool, args, fmt.Sprintf("The request shares the words %s with the tool %s, and the values come from the request",
			strings.Join(c.words, ", "), c.tool.Name))
	}
	if len(cands) == 0 {
		return &Response{Content: beyondAnswer(t.askedPrefix(), t.tools)}
	}
	best := cands[0]
	_, missing := t.q.fill(best.tool, dirs)
	if h, ok := t.dirHelper(best.tool, missing); ok {
		return t.call(h, map[string]any{}, fmt.Sprintf("The tool %s needs a directory that the request does not name, and %s tells which directories are allowed",
			best.tool.Name, h.Name))
	}
	return cannotFill(best.tool, missing)
}

// beyondVerbs ask for what a language model does and a rule-based one
// cannot: when a request starts with one and no tool is named after it,
// the model says so instead of calling a tool that shares a word with it.
var beyondVerbs = []string{"fix", "refactor", "explain", "summarize", "summarise", "translate", "implement", "debug",
	"review", "rewrite", "improve", "optimize", "optimise", "generate", "compose", "draft", "design", "solve", "play",
	"build", "develop", "analyze", "analyse"}

// beyond answers a request that asks for what the model cannot do: it
// starts with one of beyondVerbs, or it asks to write a text described
// rather than given ("write a hello world program to hello.py").
func (t *turn) beyond() (*Response, bool) {
	verb := t.q.verb
	switch {
	case t.q.describedText:
	case !slices.Contains(beyondVerbs, verb),
		slices.ContainsFunc(t.tools, func(tl Tool) bool { return slices.Contains(ownWords(tl.Name), canon(verb)) }):
		return nil, false
	}
	return &Response{Content: beyondAnswer(t.askedPrefix(), t.tools)}, true
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

// askedPrefix restates the request for an answer: "You asked: ...". Only
// its first line counts, without the mentions that addressed it, cut at
// maxAsked characters.
func (t *turn) askedPrefix() string {
	line, _, _ := strings.Cut(t.q.text, "\n")
	line = strings.Join(strings.Fields(line), " ")
	if line == "" {
		return ""
	}
	if rs := []rune(line); len(rs) > maxAsked {
		line = strings.TrimSpace(string(rs[:maxAsked])) + "…"
	}
	return "You asked: " + sentence(line) + " "
}

// maxAsked bounds the request as an answer restates it.
const maxAsked = 160

// conclude states the results of the turn's tool calls: what the person
// asked, then what came of it. A result of a tool that only named the
// allowed directories is left out when another one follows.
func (t *turn) conclude() string {
	results := t.results()
	if len(results) > 1 {
		results = slices.DeleteFunc(slices.Clone(results), func(r stepResult) bool { return t.isDirHelper(r.name) })
		if len(results) == 0 {
			results = t.results()
		}
	}
	return t.state(results)
}

// state says what the person asked, then the results.
func (t *turn) state(results []stepResult) string {
	asked := t.askedPrefix()
	if len(results) == 1 {
		r := results[0]
		name := cmp.Or(r.name, "the tool")
		text := r.text
		if r.failed {
			text = plainError(text)
			if rej, ok := parseRejection(text); ok {
				return labelled(asked + rej.say(name, r.args))
			}
		}
		switch {
		case r.failed:
			return labelled(fmt.Sprintf("%s%s failed: %s", asked, name, sentence(text)))
		case text == "":
			return labelled(fmt.Sprintf("%s%s returned nothing.", asked, name))
		}
		if s, ok := t.operation(r); ok {
			return labelled(s)
		}
		if !strings.Contains(text, "\n") && len(text) <= 200 {
			return labelled(fmt.Sprintf("%s%s returned: %s", asked, name, sentence(text)))
		}
		return labelled(fmt.Sprintf("%s%s returned:\n\n%s", asked, name, text))
	}
	var b strings.Builder
	b.WriteString(asked + "The results:")
	for _, r := range results {
		text := r.text
		if r.failed {
			text = "failed: " + plainError(text)
		}
		fmt.Fprintf(&b, "\n- %s: %s", cmp.Or(r.name, "the tool"), text)
	}
	return labelled(b.String())
}

// operation states the number result of a tool that does one operation
// ("subtract 3 from 10" with subtract): "10 - 3 = 7.".
func (t *turn) operation(r stepResult) (string, bool) {
	v, err := strconv.ParseFloat(strings.TrimSpace(r.text), 64)
	if err != nil {
		return "", false
	}
	i := slices.IndexFunc(t.tools, func(tl Tool) bool { return tl.Name == r.name })
	if i < 0 {
		return "", false
	}
	var op byte
	for sym, w := range mathOpWords {
		if slices.Contains(ownWords(r.name), w) {
			op = sym
		}
	}
	var nums []float64
	for _, p := range parseSchema(t.tools[i].Parameters).props {
		if n, ok := r.args[p.name].(float64); ok {
			nums = append(nums, n)
		}
	}
	if op == 0 || len(nums) != 2 {
		return "", false
	}
	x := &mathNode{op: op, l: &mathNode{num: nums[0]}, r: &mathNode{num: nums[1]}}
	return fmt.Sprintf("%s = %s.", x, formatNum(v)), true
}

// rejection is a person's no to a proposed call, as an agent tells its
// model.
type rejection struct {
	by, reason, words string
}

// rejectionText is how a mew agent tells its model that a proposal was
// rejected ("human rejected the proposal to call write_file on files
// (reason: disagree): \"not now\""), and the reference SDK's wording
// ("Proposal rejected by human: disagree").
var (
	rejectionText = regexp.MustCompile(`^(\S+) rejected the proposal to call \S+ on \S+(?: \(reason: ([^)]*)\))?(?:: "(.*)")?\.?$`)
	rejectionRef  = regexp.MustCompile(`(?i)\bproposal rejected by (\S+?): (.*)$`)
)

func parseRejection(text string) (rejection, bool) {
	if m := rejectionText.FindStringSubmatch(text); m != nil {
		return rejection{m[1], m[2], m[3]}, true
	}
	if m := rejectionRef.FindStringSubmatch(text); m != nil {
		return rejection{by: m[1], reason: m[2]}, true
	}
	return rejection{}, false
}

// say words the rejection of the call of tool with args.
func (r rejection) say(tool string, args map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "I proposed %s", tool)
	if len(args) > 0 {
		keys := slices.Sorted(maps.Keys(args))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + clipText(strings.Join(strings.Fields(jsonText(args[k])), " "), 60)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, ", and %s rejected it", r.by)
	if r.reason != "" && r.reason != "unknown" {
		fmt.Fprintf(&b, " (%s)", r.reason)
	}
	if r.words != "" {
		fmt.Fprintf(&b, `: "%s"`, r.words)
	}
	b.WriteString(". So it was not done.")
	return b.String()
}

// clipText cuts s at n characters, marking the cut.
func clipText(s string, n int) string {
	if rs := []rune(s); len(rs) > n {
		return string(rs[:n]) + "…"
	}
	return s
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
