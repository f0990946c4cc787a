package auditlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/internal/summary"
	"github.com/mew-protocol/mew/protocol"
)

// Node is one step of a lineage: an envelope, or a fact about the one
// above it (what admitted it, a grant, a refusal), with the steps that
// explain it below.
type Node struct {
	// Relation is how the node relates to the one above it: "" for the
	// root, or one of the Rel constants.
	Relation string `json:"relation,omitempty"`
	// Text says it in one line, for people.
	Text string `json:"text"`
	// ID, Kind, From, To and Time describe the envelope of an envelope
	// node; At is where its line is (FILE:LINE).
	ID       string    `json:"id,omitempty"`
	Kind     string    `json:"kind,omitempty"`
	From     string    `json:"from,omitempty"`
	To       []string  `json:"to,omitempty"`
	Time     time.Time `json:"time,omitzero"`
	At       string    `json:"at,omitempty"`
	Children []*Node   `json:"children,omitempty"`
	// Inferred marks an in_reasoning node found by inference (the reasoning
	// of the sender that was open when the envelope was sent) rather than
	// named by the envelope's context.
	Inferred bool `json:"inferred,omitempty"`

	entry *Entry // the envelope of an envelope node, for Envelopes
}

// Relations of a Node to the one above it.
const (
	RelAdmitted  = "admitted_by"  // the capability pattern that let the envelope through
	RelRefused   = "refused"      // why the gateway refused it
	RelGrant     = "grant"        // the runtime grant that pattern came from
	RelFulfills  = "fulfills"     // the proposal a request carried out
	RelApproved  = "approved_by"  // who approved a proposal (by fulfilling it)
	RelAnswers   = "answers"      // the request a response answers
	RelReplyTo   = "in_reply_to"  // what an envelope's correlation_id names
	RelReasoning = "in_reasoning" // the reasoning it was part of
	RelStep      = "step"         // a thought, tool call or conclusion of a reasoning
	RelResult    = "result"       // what answered or followed it
	RelNote      = "note"         // a fact: a time, an expiry, an absence
	RelEdited    = "edited"       // the approver changed the proposed arguments before carrying them out
)

// ErrUnknown is returned by Lineage for an id the log does not hold.
var ErrUnknown = errors.New("no envelope with this id in the audit log")

// maxDepth and maxSteps keep a hostile or looping log from making an
// endless tree.
const (
	maxDepth = 12
	maxSteps = 40
)

// Lineage explains the envelope id: what admitted or refused it (the
// capability pattern, the grant it came from: who granted it, when, whether
// it was in force), what it answers or fulfils (a proposal, and who approved
// it), the reasoning and question it came from, and what followed it.
func (ix *Index) Lineage(id string) (*Node, error) {
	e := ix.Lookup(id)
	if e == nil {
		return nil, fmt.Errorf("%s: %w", id, ErrUnknown)
	}
	w := &walker{ix: ix, seen: map[*Entry]bool{}}
	root := w.explain(e, 0)
	w.followers(root, e, 0)
	return root, nil
}

type walker struct {
	ix   *Index
	seen map[*Entry]bool
}

// envNode is the node of an envelope, without children.
func envNode(rel string, e *Entry) *Node {
	env := e.Env
	text := env.Kind + " " + env.ID + " from " + nameOf(env.From)
	if len(env.To) > 0 {
		text += " to " + strings.Join(env.To, ",")
	}
	if d := Describe(env); d != "" && d != "{}" {
		text += ": " + d
	}
	if e.Rejected() {
		text += " [REFUSED]"
	}
	return &Node{
		Relation: rel, Text: text, ID: env.ID, Kind: env.Kind, From: env.From, To: env.To,
		Time: e.Record.Time, At: fmt.Sprintf("%s:%d", e.Record.File, e.Record.Line), entry: e,
	}
}

func nameOf(from string) string {
	if from == "" {
		return "(unknown)"
	}
	return from
}

func note(rel, format string, args ...any) *Node {
	return &Node{Relation: rel, Text: fmt.Sprintf(format, args...)}
}

// explain returns e's node with what explains it below.
func (w *walker) explain(e *Entry, depth int) *Node {
	n := envNode("", e)
	if w.seen[e] {
		n.Text += " (shown above)"
		return n
	}
	w.seen[e] = true
	if depth >= maxDepth {
		n.Children = append(n.Children, note(RelNote, "… (the lineage goes on; ask why %s)", e.Env.ID))
		return n
	}
	n.Children = append(n.Children, w.admission(e)...)
	env := e.Env
	for _, c := range env.CorrelationID {
		t := w.ix.before(c, e.Record.Time)
		if t == nil {
			n.Children = append(n.Children, note(RelReplyTo, "in reply to %s, which is not in the log", c))
			continue
		}
		switch {
		case t.Env.Kind == protocol.KindMCPProposal && env.Kind == protocol.KindMCPRequest:
			p := w.explain(t, depth+1)
			p.Relation = RelFulfills
			p.Children = append([]*Node{note(RelApproved, "%s, who carried it out with %s at %s",
				nameOf(env.From), env.ID, stamp(e.Record.Time))}, p.Children...)
			if a := w.ix.approvalOf(t.Env.ID, e.Record.Time); a != nil {
				p.Children = append([]*Node{a}, p.Children...)
			}
			if ed := edited(t.Env, env); ed != nil {
				p.Children = append([]*Node{ed}, p.Children...)
			}
			n.Children = append(n.Children, p)
		case env.Kind == protocol.KindMCPResponse:
			p := w.explain(t, depth+1)
			p.Relation = RelAnswers
			n.Children = append(n.Children, p)
		default:
			p := w.explain(t, depth+1)
			p.Relation = RelReplyTo
			n.Children = append(n.Children, p)
		}
	}
	if env.Kind == protocol.KindReasoningStart {
		n.Children = append(n.Children, w.steps(e, depth)...)
	} else if r, inferred := w.reasoningOf(e); r != nil && !w.seen[r] {
		rn := w.explain(r, depth+1)
		rn.Relation = RelReasoning
		rn.Inferred = inferred
		if inferred {
			rn.Text += " (open when " + nameOf(env.From) + " sent this)"
		} else {
			rn.Text += " (named by its context)"
		}
		n.Children = append(n.Children, rn)
	} else if r == nil && env.Context != "" && reasoningStep(env.Kind) {
		n.Children = append(n.Children, note(RelReasoning, "its context %s names no reasoning in the log", env.Context))
	}
	return n
}

// reasoningStep reports whether kind is one a reasoning's sender sends as
// a step of it: a tool call or a proposal.
func reasoningStep(kind string) bool {
	return kind == protocol.KindMCPRequest || kind == protocol.KindMCPProposal
}

// admission says what let e through, or why it was refused.
func (w *walker) admission(e *Entry) []*Node {
	var out []*Node
	for _, d := range e.Decisions {
		if d.Result != "allowed" {
			k := note(RelRefused, "%s holds no capability for %s", nameOf(d.Participant), d.RequiredCapability)
			if len(d.Granted) > 0 {
				k.Children = append(k.Children, note(RelNote, "its capabilities were %s", summary.Compact(d.Granted)))
			}
			out = append(out, k)
			continue
		}
		a := note(RelAdmitted, "%s (%s)", summary.Compact(d.MatchedCapability), sourceText(d))
		if gid := d.Meta("grant_id"); gid != "" {
			a.Children = append(a.Children, w.grantNode(gid, d.Time))
		}
		out = append(out, a)
	}
	if e.Rejected() {
		reason := e.Record.Meta("reason")
		if len(e.Decisions) == 0 || reason != "capability_violation" {
			out = append(out, note(RelRefused, "by the gateway: %s", nameOr(reason, "no reason recorded")))
		}
		for _, r := range w.ix.replies[e.Env.ID] {
			if r.Env.Kind == protocol.KindSystemError && !w.seen[r] {
				w.seen[r] = true
				out = append(out, envNode(RelResult, r))
			}
		}
	} else if len(e.Decisions) == 0 {
		if strings.HasPrefix(e.Env.From, "system:") || e.Record.Origin {
			out = append(out, note(RelNote, "sent by the gateway itself"))
		} else {
			out = append(out, note(RelNote, "no capability decision for it in the log"))
		}
	}
	return out
}

func nameOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func sourceText(d *Record) string {
	switch d.MatchedSource {
	case "static":
		return "a capability of " + nameOf(d.Participant) + " in the space config"
	case "dynamic":
		return "a capability granted to " + nameOf(d.Participant) + " at runtime"
	case "implicit":
		return "implicit: every participant may"
	}
	return nameOr(d.MatchedSource, "source not recorded")
}

// grantNode tells of grant gid, as it stood at time at (the action's).
func (w *walker) grantNode(gid string, at time.Time) *Node {
	g := w.ix.GrantOf(gid)
	if g == nil {
		return note(RelGrant, "grant %s, which is not in the log (rotated away?)", gid)
	}
	n := note(RelGrant, "grant %s from %s to %s", gid, nameOf(g.By), nameOf(g.To))
	if g.Entry != nil {
		n.At = fmt.Sprintf("%s:%d", g.Entry.Record.File, g.Entry.Record.Line)
		n.ID, n.Kind, n.From, n.To, n.Time, n.entry = gid, g.Entry.Env.Kind, g.Entry.Env.From, g.Entry.Env.To, g.Entry.Record.Time, g.Entry
		if !w.seen[g.Entry] {
			w.seen[g.Entry] = true
			n.Children = append(n.Children, w.admission(g.Entry)...)
		}
	}
	n.Text += ": no approval needed for what it covers"
	for _, p := range g.Patterns {
		cov := p.Meta("covered_by")
		if cov == "" {
			cov = metaRaw(p, "covered_by")
		}
		n.Children = append(n.Children, note(RelNote, "grants %s, within %s's %s", summary.Compact(p.MatchedCapability), nameOf(g.By), nameOr(cov, "capabilities")))
	}
	n.Children = append(n.Children, w.standing(g, at))
	return n
}

// metaRaw returns the raw JSON of a metadata member as compact text.
func metaRaw(r *Record, key string) string {
	var m map[string]json.RawMessage
	if len(r.Metadata) == 0 || json.Unmarshal(r.Metadata, &m) != nil {
		return ""
	}
	if v, ok := m[key]; ok {
		return summary.Compact(v)
	}
	return ""
}

// standing says whether grant g was in force at time at, and what became
// of it.
func (w *walker) standing(g *Grant, at time.Time) *Node {
	var parts []string
	switch {
	case g.ExpiresAt.IsZero():
		parts = append(parts, "no expiry: in force until revoked")
	case at.Before(g.ExpiresAt):
		parts = append(parts, fmt.Sprintf("in force at the action: it expired %s later, at %s", g.ExpiresAt.Sub(at).Round(time.Millisecond), stamp(g.ExpiresAt)))
	default:
		parts = append(parts, fmt.Sprintf("set to expire at %s, before the action", stamp(g.ExpiresAt)))
	}
	if g.Expired != nil {
		parts = append(parts, fmt.Sprintf("the gateway removed it at %s (expiry, %s:%d)", stamp(g.Expired.Time), g.Expired.File, g.Expired.Line))
	}
	for _, r := range g.Revoked {
		parts = append(parts, fmt.Sprintf("revoked by %s at %s (%s)", nameOf(r.Env.From), stamp(r.Record.Time), r.Env.ID))
	}
	if g.Expired == nil && len(g.Revoked) == 0 && (g.ExpiresAt.IsZero() || w.ix.last.Before(g.ExpiresAt)) {
		parts = append(parts, "still in force at the end of the log")
	}
	return note(RelNote, "%s", strings.Join(parts, "; "))
}

// reasoningOf returns the reasoning e belongs to: the reasoning/start its
// context names, or else, for a chat answer, the reasoning started on its
// question, and for a tool call or proposal without context, the reasoning
// of its sender that was open when it was sent (inferred: senders that set
// no context on their calls still get a lineage).
func (w *walker) reasoningOf(e *Entry) (r *Entry, inferred bool) {
	env := e.Env
	if env.Context != "" {
		if r := w.ix.before(env.Context, e.Record.Time); r != nil && r.Env.Kind == protocol.KindReasoningStart {
			return r, false
		}
		if reasoningStep(env.Kind) {
			return nil, false
		}
	}
	switch env.Kind {
	case protocol.KindMCPRequest, protocol.KindMCPProposal, protocol.KindChat:
	default:
		return nil, false
	}
	if env.Kind == protocol.KindChat {
		// An answer: the reasoning that started on the question it answers.
		for _, q := range env.CorrelationID {
			for _, s := range w.ix.replies[q] {
				if s.Env.Kind == protocol.KindReasoningStart && s.Env.From == env.From {
					return s, false
				}
			}
		}
		return nil, false
	}
	for i := e.seq - 1; i >= 0; i-- {
		s := w.ix.order[i]
		if s.Env.Kind != protocol.KindReasoningStart || s.Env.From != env.From {
			continue
		}
		if end := w.end(s); end == nil || end.seq > e.seq {
			return s, true
		}
		return nil, false
	}
	return nil, false
}

// end returns the conclusion or cancellation of reasoning s, or nil.
func (w *walker) end(s *Entry) *Entry {
	for _, c := range w.ix.context[s.Env.ID] {
		if c.Env.Kind == protocol.KindReasoningConclusion || c.Env.Kind == protocol.KindReasoningCancel {
			return c
		}
	}
	return nil
}

// steps lists a reasoning's thoughts, the tool calls its sender made while
// it was open, with their results, and its conclusion.
func (w *walker) steps(s *Entry, depth int) []*Node {
	end := w.end(s)
	var out []*Node
	for _, e := range w.ix.order[s.seq+1:] {
		if end != nil && e.seq > end.seq {
			break
		}
		inContext := e.Env.Context == s.Env.ID
		// A call without context counts when its sender reasons here; one
		// naming another context is a step of that one.
		call := e.Env.From == s.Env.From && reasoningStep(e.Env.Kind) && (inContext || e.Env.Context == "")
		if !inContext && !call {
			continue
		}
		if len(out) == maxSteps {
			out = append(out, note(RelNote, "… more steps"))
			break
		}
		if w.seen[e] {
			n := envNode(RelStep, e)
			n.Text += " (shown above)"
			out = append(out, n)
			continue
		}
		w.seen[e] = true
		n := envNode(RelStep, e)
		if call {
			n.Children = append(n.Children, w.admission(e)...)
			w.followers(n, e, 0)
		}
		out = append(out, n)
	}
	return out
}

// followers adds below n what answered e: responses, fulfilments of a
// proposal (with their own answers), refusals and errors.
func (w *walker) followers(n *Node, e *Entry, depth int) {
	if depth > 2 {
		return
	}
	for _, r := range w.ix.replies[e.Env.ID] {
		if w.seen[r] || r.Record.Time.Before(e.Record.Time) {
			continue
		}
		switch r.Env.Kind {
		case protocol.KindMCPResponse, protocol.KindMCPRequest, protocol.KindMCPReject, protocol.KindMCPWithdraw,
			protocol.KindSystemError, protocol.KindChat, protocol.KindCapabilityGrantAck:
		default:
			continue
		}
		w.seen[r] = true
		f := envNode(RelResult, r)
		if r.Env.Kind == protocol.KindMCPRequest {
			f.Text = "fulfilled by " + f.Text
			if ed := edited(e.Env, r.Env); ed != nil && e.Env.Kind == protocol.KindMCPProposal {
				f.Children = append(f.Children, ed)
			}
			f.Children = append(f.Children, w.admission(r)...)
		}
		w.followers(f, r, depth+1)
		n.Children = append(n.Children, f)
	}
}

func stamp(t time.Time) string { return protocol.FormatTime(t) }

// approvalOf tells how the space's approval policy approved proposal id
// before at (its last system/approval from the gateway saying approved),
// or nil when no rule governed it (docs/approvals.md).
func (ix *Index) approvalOf(id string, at time.Time) *Node {
	var last *protocol.Approval
	var when time.Time
	for _, r := range ix.replies[id] {
		if r.Env.Kind != protocol.KindSystemApproval || r.Env.From != protocol.GatewayID || r.Record.Time.After(at) {
			continue
		}
		var a protocol.Approval
		if r.Env.DecodePayload(&a) != nil || a.State != protocol.ApprovalApproved || a.Proposal != id {
			continue
		}
		last, when = &a, r.Record.Time
	}
	if last == nil {
		return nil
	}
	n := note(RelApproved, "%s under the space's approval rule %s, %d of %s needed, at %s",
		strings.Join(last.ApprovedBy, " and "), last.Rule, last.Required, strings.Join(last.Approvers, ", "), stamp(when))
	if last.Reason != "" {
		n.Children = append(n.Children, note(RelNote, "the rule says: %s", last.Reason))
	}
	return n
}

// edited says what an approver changed between a proposal and the request
// that carried it out (the method, or the params: for a tool call its
// arguments, key by key), or nil when it carried out what was proposed.
func edited(proposal, request *protocol.Envelope) *Node {
	var p, r struct {
		Method string         `json:"method"`
		Params map[string]any `json:"params"`
	}
	if json.Unmarshal(proposal.Payload, &p) != nil || json.Unmarshal(request.Payload, &r) != nil {
		return nil
	}
	if p.Method != r.Method {
		return note(RelEdited, "approved with another method: %s proposed, %s carried out", p.Method, r.Method)
	}
	before, after := p.Params, r.Params
	what := "params"
	if pa, ok := p.Params["arguments"].(map[string]any); ok {
		if ra, ok := r.Params["arguments"].(map[string]any); ok && reflect.DeepEqual(without(p.Params, "arguments"), without(r.Params, "arguments")) {
			before, after, what = pa, ra, "arguments"
		}
	}
	if reflect.DeepEqual(before, after) {
		return nil
	}
	var changed []string
	for k, v := range after {
		if w, ok := before[k]; !ok || !reflect.DeepEqual(v, w) {
			changed = append(changed, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			changed = append(changed, k+" (removed)")
		}
	}
	slices.Sort(changed)
	pj, _ := json.Marshal(before)
	rj, _ := json.Marshal(after)
	return note(RelEdited, "approved with edited %s (%s): proposed %s, carried out %s",
		what, strings.Join(changed, ", "), clip.Bytes(string(pj), 200), clip.Bytes(string(rj), 200))
}

// without returns m less key (a copy).
func without(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// WriteTree prints the lineage as an indented tree, one node a line.
func (n *Node) WriteTree(out io.Writer) error {
	if _, err := fmt.Fprintln(out, n.line()); err != nil {
		return err
	}
	return n.writeChildren(out, "")
}

func (n *Node) line() string {
	s := n.Text
	if !n.Time.IsZero() && n.ID != "" {
		s = stamp(n.Time) + "  " + s
	}
	return s
}

func (n *Node) writeChildren(out io.Writer, prefix string) error {
	for i, c := range n.Children {
		branch, next := "├─ ", "│  "
		if i == len(n.Children)-1 {
			branch, next = "└─ ", "   "
		}
		label := ""
		if c.Relation != "" && c.Relation != RelNote && c.Relation != RelStep {
			label = strings.ReplaceAll(c.Relation, "_", " ") + ": "
		}
		if _, err := fmt.Fprintln(out, prefix+branch+label+c.line()); err != nil {
			return err
		}
		if err := c.writeChildren(out, prefix+next); err != nil {
			return err
		}
	}
	return nil
}

// Envelopes returns the envelopes the lineage shows, each once.
func (n *Node) Envelopes() []*Entry {
	var out []*Entry
	var walk func(*Node)
	walk = func(n *Node) {
		if n.entry != nil && !slices.Contains(out, n.entry) {
			out = append(out, n.entry)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(n)
	return out
}
