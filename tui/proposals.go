package tui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/feed"
	"github.com/mew-protocol/mew/internal/summary"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// proposal is an mcp/proposal seen in the space, numbered from 1 in the
// order it arrived.
type proposal struct {
	n       int
	id      string
	from    string
	to      []string
	method  string
	params  json.RawMessage
	tool    string          // the tool of a tools/call, "" otherwise
	args    json.RawMessage // its arguments
	payload json.RawMessage // the proposal's payload as it came

	askMe bool // the user may decide it: addressed to them, or they may fulfil it
	// policy is the gateway's last word on it when the space's approval
	// policy governs it: who must still approve, and why.
	policy    *feed.Approval
	postponed bool   // Esc: out of the dialog until /review
	deciding  bool   // a decision of the user's is on its way
	settled   bool   // approved, rejected, withdrawn, timed out
	outcome   string // how it was settled: "approved by you", "rejected by bob: unsafe"

	tools    []string // the target's tools, for the "its tools" grant scope
	toolsErr error

	oldAsked bool     // the file a write would replace was asked for
	oldKnown bool     // and read: diff holds the change
	oldErr   error    // or it could not be read (a new file, most often)
	diff     []string // unified diff lines from the file to the content
}

// open reports whether the user still has to decide it.
func (p *proposal) open() bool { return p.askMe && !p.settled && !p.deciding }

// key is the proposal's id, by which its book finds it.
func (p *proposal) key() string { return p.id }

// newProposal reads an mcp/proposal envelope.
func newProposal(n int, env *protocol.Envelope) *proposal {
	var m protocol.MCPMessage
	_ = env.DecodePayload(&m)
	p := &proposal{n: n, id: env.ID, from: env.From, to: env.To, method: m.Method, params: m.Params, payload: env.Payload}
	if m.Method == "tools/call" {
		var c struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal(m.Params, &c)
		p.tool, p.args = c.Name, c.Arguments
	}
	return p
}

// title is "assistant → files: write_file".
func (p *proposal) title() string {
	what := p.method
	if p.tool != "" {
		what = p.tool
	}
	return termtext.Line(p.from) + " → " + names(p.to) + ": " + termtext.Line(what)
}

// maxPreviewLines bounds the lines of one value in a preview.
const maxPreviewLines = 8

// Previewer writes the preview of a tool call's arguments, one line each,
// not yet cleaned (the caller cleans them). A later session adds previewers
// for tools it knows (a diff for a file that exists).
type Previewer func(args []member) []string

// previewers are the tool-specific previews, by tool name; others get
// previewArgs.
var previewers = map[string]Previewer{}

// preview returns the lines that show what the proposal would do: each
// argument as "name: value", a multi-line value (a file's content) as a
// block under its name. The lines are cleaned; the caller indents them.
func (p *proposal) preview() []string {
	var raw []string
	if p.tool == "" {
		raw = []string{"params: " + clip.Runes(summary.Compact(p.params), 400)}
	} else {
		members, ok := objectMembers(p.args)
		switch {
		case !ok && len(p.args) > 0:
			raw = []string{"arguments: " + clip.Runes(summary.Compact(p.args), 400)}
		case p.oldKnown && p.diff != nil:
			raw = p.diffPreview(members)
		case previewers[p.tool] != nil:
			raw = previewers[p.tool](members)
		default:
			raw = previewArgs(members)
		}
	}
	out := make([]string, 0, len(raw))
	for _, l := range raw {
		lead := len(l) - len(strings.TrimLeft(l, " ")) // the block's own indentation stays
		out = append(out, l[:lead]+termtext.Line(l[lead:]))
	}
	return out
}

// previewArgs lists the arguments, a path first: "path: notes.txt", then a
// content as its lines under "content:".
func previewArgs(members []member) []string {
	var out, rest []string
	for _, m := range members {
		v := scalarText(m.value)
		text := termtext.Clean(v)
		switch {
		case strings.Contains(strings.TrimRight(text, "\n"), "\n"):
			lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
			rest = append(rest, m.key+":")
			for i, l := range lines {
				if i == maxPreviewLines {
					rest = append(rest, fmt.Sprintf("  … %d more lines", len(lines)-i))
					break
				}
				rest = append(rest, "  "+l)
			}
		case m.key == "path" || m.key == "file" || m.key == "uri":
			out = append(out, m.key+": "+clip.Runes(v, 200))
		default:
			rest = append(rest, m.key+": "+clip.Runes(v, 200))
		}
	}
	return append(out, rest...)
}

// proposalEntry shows a proposal in the transcript, with its outcome.
type proposalEntry struct{ p *proposal }

func (e *proposalEntry) lines(rc *renderCtx) []string {
	p := e.p
	head := rc.st.Proposal.Render(fmt.Sprintf("#%d ", p.n)) + rc.st.speaker(p.from).Render(termtext.Line(p.from)) +
		rc.st.Dim.Render(" proposes → "+names(p.to)+": ")
	what := p.method
	if p.tool != "" {
		what = p.tool
	}
	out := wrapText(head+termtext.Line(what), rc.width, indent)
	for _, l := range p.preview() {
		out = append(out, wrapText(indent+l, rc.width, indent+"  ")...)
	}
	var status string
	switch {
	case p.settled:
		status = rc.outcome(p.outcome, "approved")
	case p.deciding:
		status = rc.st.Dim.Render("deciding…")
	case p.policy != nil && !p.askMe:
		status = rc.st.Dim.Render(policyLine(p.policy))
	case p.askMe && p.postponed:
		status = rc.st.Proposal.Render("postponed: /review to decide")
	case p.askMe && p.policy != nil && p.policy.State != protocol.ApprovalApproved:
		status = rc.st.Proposal.Render("awaiting your approval: " + policyLine(p.policy))
	case p.askMe:
		status = rc.st.Proposal.Render("awaiting your decision")
	default:
		status = rc.st.Dim.Render("awaiting a decision")
	}
	return append(out, wrapText(indent+status, rc.width, indent)...)
}

// editable is what the dialog's editor starts with: the arguments of a tool
// call (its params otherwise) as indented JSON.
func (p *proposal) editable() string {
	src := p.params
	if p.tool != "" {
		src = p.args
	}
	var b bytes.Buffer
	if len(src) == 0 || json.Indent(&b, src, "", "  ") != nil {
		return "{}"
	}
	return b.String()
}

// editedParams reads the editor's text as the arguments (or params) to
// fulfil p with: a JSON object. For a tool call it returns the params that
// name the same tool with those arguments.
func (p *proposal) editedParams(text string) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if obj == nil {
		return nil, errors.New("not a JSON object")
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	compact, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if p.tool == "" {
		return compact, nil
	}
	return json.Marshal(map[string]any{"name": p.tool, "arguments": json.RawMessage(compact)})
}

// diffPreview shows a file write as the path and the diff from the file
// as it is; the other arguments follow.
func (p *proposal) diffPreview(members []member) []string {
	var out, rest []string
	for _, m := range members {
		switch m.key {
		case "path":
			out = append(out, "path: "+clip.Runes(scalarText(m.value), 200))
		case "content":
		default:
			rest = append(rest, m.key+": "+clip.Runes(scalarText(m.value), 200))
		}
	}
	if len(p.diff) == 0 {
		return append(append(out, "content: the same as the file's"), rest...)
	}
	out = append(out, "changes to the file:")
	for i, l := range p.diff {
		if i == 3*maxPreviewLines {
			out = append(out, fmt.Sprintf("  … %d more lines of diff", len(p.diff)-i))
			break
		}
		if strings.HasPrefix(l, "@@") {
			out = append(out, "  "+l)
			continue
		}
		// The marker stays, a space included; the text is cleaned.
		out = append(out, "  "+l[:1]+termtext.Line(l[1:]))
	}
	return append(out, rest...)
}

// policyLine says in words where a governed proposal stands under the
// space's approval policy.
func policyLine(a *feed.Approval) string {
	rule := "rule " + termtext.Line(a.Rule)
	if a.Reason != "" {
		rule += ": " + termtext.Line(clip.Runes(a.Reason, 160))
	}
	switch a.State {
	case protocol.ApprovalApproved:
		return "approved by " + names(a.ApprovedBy) + " under " + rule
	case protocol.ApprovalAwaiting, protocol.ApprovalEscalated:
		s := fmt.Sprintf("awaiting %d more approval", a.Remaining)
		if a.Remaining != 1 {
			s += "s"
		}
		s += " of " + names(a.Approvers) + " (" + rule + ")"
		if len(a.ApprovedBy) > 0 {
			s += "; approved by " + names(a.ApprovedBy)
		}
		if a.State == protocol.ApprovalEscalated {
			s = "escalated: " + s
		}
		return s
	}
	return termtext.Line(a.State) + " (" + rule + ")"
}
