package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/mew-protocol/mew/capability"
	"github.com/mew-protocol/mew/internal/termtext"
	"github.com/mew-protocol/mew/protocol"
)

// grantScope is one choice of what a grant covers.
type grantScope struct {
	label   string          // "add with these exact arguments"
	pattern json.RawMessage // the capability pattern granted
	err     error           // why this scope cannot be granted, if it cannot
}

// lifetime is one choice of how long a grant lasts.
type lifetime struct {
	label   string
	ttl     time.Duration // >0: ttl_seconds
	session bool          // revoked when the TUI exits
	none    bool          // once: no grant at all
}

// lifetimes are the choices, in the dialog's order.
var lifetimes = []lifetime{
	{label: "once (no grant)", none: true},
	{label: "10 minutes", ttl: 10 * time.Minute},
	{label: "this session", session: true},
	{label: "until revoked"},
}

// scopes returns the grant scopes the dialog offers for p: the tool with
// these exact arguments, the tool with any arguments, every tool of the
// target (once its tools are known). Each pattern is checked to allow the
// very request that fulfils p; one that cannot be written or would not
// allow it carries an error instead and is not offered.
//
// Capability patterns cannot name the target (only kind and payload are
// matched), so "this tool" covers a tool of that name whoever offers it;
// the labels say so.
func (p *proposal) scopes() []grantScope {
	if p.tool == "" {
		pat, err := exactPattern(map[string]any{"method": p.method, "params": json.RawMessage(p.params)})
		return []grantScope{checked(p, grantScope{label: termtext.Line(p.method) + " with these exact params", pattern: pat, err: err})}
	}
	tool := termtext.Line(p.tool)
	exact, err := exactPattern(map[string]any{"method": "tools/call", "params": map[string]any{"name": p.tool, "arguments": json.RawMessage(p.args)}})
	out := []grantScope{checked(p, grantScope{label: tool + " with these exact arguments", pattern: exact, err: err})}
	anyArgs, err := exactPattern(map[string]any{"method": "tools/call", "params": map[string]any{"name": p.tool}})
	out = append(out, checked(p, grantScope{label: tool + " with any arguments", pattern: anyArgs, err: err}))
	its := grantScope{label: "every tool of " + names(p.to)}
	switch {
	case p.toolsErr != nil:
		its.err = fmt.Errorf("its tools are unknown: %w", p.toolsErr)
	case p.tools == nil:
		its.err = errors.New("its tools are being listed")
	default:
		list := make([]string, len(p.tools)) // alternatives: any one of them
		for i, t := range p.tools {
			list[i] = literalString(t)
		}
		its.pattern, its.err = json.Marshal(map[string]any{"kind": protocol.KindMCPRequest,
			"payload": map[string]any{"method": "tools/call", "params": map[string]any{"name": list}}})
		its.label += " (" + names(p.tools) + ")"
	}
	return append(out, checked(p, its))
}

// checked compiles the scope's pattern and makes sure it allows the request
// that fulfils p; otherwise the scope gets an error.
func checked(p *proposal, s grantScope) grantScope {
	if s.err != nil {
		return s
	}
	set, err := capability.Compile([]json.RawMessage{s.pattern})
	if err != nil {
		s.err = err
		return s
	}
	if _, ok := set.Match(protocol.KindMCPRequest, p.payload); !ok {
		s.err = errors.New("the pattern would not allow this call")
	}
	return s
}

// exactPattern writes the capability pattern {kind: mcp/request, payload: P}
// in which every value of payload is matched exactly: a string that the
// matcher would read as a glob, a negation or a regex becomes an anchored
// regex of its literal text. An array in payload is a list of alternatives
// (any one matches), as the matcher reads arrays; in an argument that would
// not be exact, so arguments holding arrays cannot be granted exactly.
func exactPattern(payload map[string]any) (json.RawMessage, error) {
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	lit, err := literal(v)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"kind": protocol.KindMCPRequest, "payload": lit})
}

// literal turns a JSON value into a pattern that matches exactly it.
func literal(v any) (any, error) {
	switch v := v.(type) {
	case string:
		return literalString(v), nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if strings.ContainsAny(k, "*?") || strings.HasPrefix(k, "$") {
				return nil, fmt.Errorf("the member name %q cannot be matched exactly", k)
			}
			lx, err := literal(x)
			if err != nil {
				return nil, err
			}
			out[k] = lx
		}
		return out, nil
	case []any:
		return nil, errors.New("arguments holding lists cannot be granted exactly")
	}
	return v, nil // numbers, booleans, null match themselves
}

// literalString returns a pattern for exactly s.
func literalString(s string) string {
	special := s == "" || strings.ContainsAny(s, "*?\\") || strings.HasPrefix(s, "!") ||
		(len(s) >= 2 && strings.HasPrefix(s, "/") && strings.HasSuffix(s, "/"))
	if !special {
		return s
	}
	return "/^" + regexp.QuoteMeta(s) + "$/"
}

// grant is a capability/grant the user made in this session.
type grant struct {
	n         int
	id        string // the grant's envelope id
	recipient string
	what      string // the scope's label
	life      lifetime
	made      time.Time
	state     string // "", "accepted", "refused: …", "revoked"
}

// expires returns when the grant ends by itself (zero: it does not).
func (g *grant) expires() time.Time {
	if g.life.ttl > 0 {
		return g.made.Add(g.life.ttl)
	}
	return time.Time{}
}

// active reports whether the grant is in force, as far as the user knows.
func (g *grant) active(now time.Time) bool {
	if g.state == "revoked" || strings.HasPrefix(g.state, "refused") {
		return false
	}
	e := g.expires()
	return e.IsZero() || now.Before(e)
}

// grantEnvelope builds the capability/grant for g.
func grantEnvelope(g *grant, pattern json.RawMessage) (*protocol.Envelope, error) {
	payload := protocol.Grant{
		Recipient:    g.recipient,
		Capabilities: []json.RawMessage{pattern},
		Reason:       "approved in the terminal UI: " + g.what + ", " + g.life.label,
	}
	if g.life.ttl > 0 {
		payload.TTLSeconds = int64(g.life.ttl / time.Second)
	}
	// The gateway ends it when this person's connection has gone for its
	// grace period, quit or cut off alike; the revoke on exit is a
	// courtesy that ends it at once.
	payload.Session = g.life.session
	env, err := protocol.New(protocol.KindCapabilityGrant, payload)
	if err != nil {
		return nil, err
	}
	env.ID = g.id
	env.To = []string{g.recipient}
	return env, nil
}

// revokeEnvelope builds the capability/revoke of g.
func revokeEnvelope(g *grant) (*protocol.Envelope, error) {
	env, err := protocol.New(protocol.KindCapabilityRevoke, protocol.Revoke{Recipient: g.recipient, GrantID: g.id, Reason: "revoked in the terminal UI"})
	if err != nil {
		return nil, err
	}
	env.To = []string{g.recipient}
	return env, nil
}
