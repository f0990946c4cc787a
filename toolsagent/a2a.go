package toolsagent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/protocol"
)

// MetadataSkillID is the member of an A2A message's metadata that names
// the skill to run; MetadataArguments holds arguments as an object.
const (
	MetadataSkillID   = "skillId"
	MetadataArguments = "arguments"
)

// A2AOptions configures NewA2AServer.
type A2AOptions struct {
	// URL is the JSON-RPC endpoint as callers reach it, published in the
	// card; required.
	URL string
	// Authenticate names callers (a2a.Options.Authenticate); nil means
	// all are a2a.Anonymous.
	Authenticate func(*http.Request) (string, error)
	// SecuritySchemes and SecurityRequirements are published in the card.
	SecuritySchemes      map[string]a2a.SecurityScheme
	SecurityRequirements []a2a.SecurityRequirement
	// Limits are the server's bounds (a2a.Options' Max*, Retention,
	// StreamBuffer, KeepAlive); its Card, Executor, Authenticate and
	// Logger are set here.
	Limits a2a.Options
}

// AgentCard is the definition as an A2A agent card: its name, description
// and version, and each tool as a skill (id and name the tool's name),
// served at url over JSON-RPC with streaming.
func (a *Agent) AgentCard(url string) *a2a.AgentCard {
	d := a.def
	card := &a2a.AgentCard{
		Name:                d.Name,
		Description:         strings.TrimSpace(d.Description),
		Version:             d.Version,
		SupportedInterfaces: []a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}},
		Capabilities:        a2a.AgentCapabilities{Streaming: a2a.Bool(true), PushNotifications: a2a.Bool(false)},
		DefaultInputModes:   []string{"text/plain", "application/json"},
		DefaultOutputModes:  []string{"text/plain"},
	}
	if card.Description == "" {
		card.Description = d.Name
	}
	if card.Version == "" {
		card.Version = "0.0.0"
	}
	for _, t := range d.Tools {
		desc := t.Description
		if desc == "" {
			desc = t.Name
		}
		tags := t.Tags
		if len(tags) == 0 {
			tags = []string{d.Name}
		}
		card.Skills = append(card.Skills, a2a.AgentSkill{ID: t.Name, Name: t.Name, Description: desc, Tags: tags,
			Examples: t.Examples, InputModes: t.InputModes, OutputModes: t.OutputModes})
	}
	return card
}

// NewA2AServer serves the agent as an A2A agent: its card lists the tools
// as skills, and each task runs a skill as Call runs a tool, fresh and
// headless.
//
// A message names its skill with metadata skillId (a definition with one
// tool needs none) and gives the arguments as data parts holding objects
// or metadata arguments; its text fills the first required string
// parameter still missing (or else the first string parameter missing).
// Arguments that do not satisfy the parameters put the task in
// input-required, asking for what is missing; the caller's next message
// in the task adds to the arguments. An unknown skill is rejected. The
// answer is an artifact named after the skill; the steps are status
// updates, and while ServeSpace runs, reasoning envelopes in the space.
// Close the server before the agent.
func (a *Agent) NewA2AServer(opts A2AOptions) (*a2a.Server, error) {
	if opts.URL == "" {
		return nil, errors.New("toolsagent: A2A: no URL for the card")
	}
	card := a.AgentCard(opts.URL)
	card.SecuritySchemes, card.SecurityRequirements = opts.SecuritySchemes, opts.SecurityRequirements
	so := opts.Limits
	so.Card, so.Executor, so.Authenticate, so.Logger = card, a2a.ExecutorFunc(a.executeA2A), opts.Authenticate, a.log
	s, err := a2a.NewServer(so)
	if err != nil {
		return nil, fmt.Errorf("toolsagent: %w", err)
	}
	return s, nil
}

// executeA2A runs one turn of an A2A task.
func (a *Agent) executeA2A(ctx context.Context, run *a2a.Run) error {
	msgs := make([]a2a.Message, 0, len(run.History)+1)
	for _, m := range run.History {
		if m.Role == a2a.RoleUser {
			msgs = append(msgs, m)
		}
	}
	msgs = append(msgs, run.Message)
	t, args, problem := a.a2aRequest(msgs)
	if t == nil {
		return run.End(a2a.TaskStateRejected, a2a.TextPart(problem))
	}
	if _, err := t.Fill(args); err != nil {
		var argErr *ArgumentError
		if !errors.As(err, &argErr) {
			return err
		}
		return run.End(a2a.TaskStateInputRequired, a.inputRequest(t, argErr)...)
	}
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	m := a.mirror(run, t.Name, cancel)
	res, err := a.Call(ctx, t.Name, args, CallOptions{
		ContextID: run.TaskID,
		OnStart: func(prompt string, _ []string) {
			m.start(prompt)
			_ = run.Working(fmt.Sprintf("Running %s.", t.Name))
		},
		OnStep: func(st Step) {
			m.step(st)
			_ = run.Working(st.Summary())
		},
	})
	if err != nil {
		m.end(ctx, err, "")
		if parent.Err() == nil && ctx.Err() != nil {
			// Cancelled in the space (reasoning/cancel), not by the caller.
			return run.End(a2a.TaskStateCanceled, a2a.TextPart("Canceled in the space: "+context.Cause(ctx).Error()))
		}
		return err
	}
	m.end(ctx, nil, res.Text)
	return run.AddArtifact(a2a.Artifact{Name: t.Name, Parts: []a2a.Part{a2a.TextPart(res.Text)}})
}

// a2aRequest finds the skill and the arguments of a task's messages, in
// order; without a skill it says why.
func (a *Agent) a2aRequest(msgs []a2a.Message) (*Tool, json.RawMessage, string) {
	var skill string
	args := map[string]json.RawMessage{}
	for _, m := range msgs {
		var meta map[string]json.RawMessage
		_ = json.Unmarshal(m.Metadata, &meta)
		var id string
		if json.Unmarshal(meta[MetadataSkillID], &id) == nil && id != "" {
			skill = id
		}
		mergeObject(args, meta[MetadataArguments])
		for _, p := range m.Parts {
			if p.Kind() == "data" {
				mergeObject(args, p.Data)
			}
		}
		if text := strings.TrimSpace(m.Text()); text != "" {
			skill = a.fillText(skill, args, text)
		}
	}
	if skill == "" && len(a.def.Tools) == 1 {
		skill = a.def.Tools[0].Name
	}
	names := make([]string, len(a.def.Tools))
	for i, t := range a.def.Tools {
		names[i] = t.Name
	}
	if skill == "" {
		return nil, nil, fmt.Sprintf("Name a skill in the message's metadata %q: this agent has %s.", MetadataSkillID, strings.Join(names, ", "))
	}
	t, ok := a.def.Tool(skill)
	if !ok {
		return nil, nil, fmt.Sprintf("This agent has no skill %q; it has %s.", clip.Mark(skill, 64), strings.Join(names, ", "))
	}
	b, _ := json.Marshal(args)
	return t, b, ""
}

// fillText puts text in the parameter of skill (or of the only skill) it
// fills: the first required string parameter not given, or else the
// first string parameter not given. It returns the skill.
func (a *Agent) fillText(skill string, args map[string]json.RawMessage, text string) string {
	name := skill
	if name == "" && len(a.def.Tools) == 1 {
		name = a.def.Tools[0].Name
	}
	t, ok := a.def.Tool(name)
	if !ok || t.Parameters == nil {
		return skill
	}
	var target string
	for _, p := range t.Parameters.Properties {
		if _, given := args[p.Name]; given || p.Schema.Type() != TypeString {
			continue
		}
		if slices.Contains(t.Parameters.Required, p.Name) {
			target = p.Name
			break
		}
		if target == "" {
			target = p.Name
		}
	}
	if target != "" {
		args[target], _ = json.Marshal(text)
	}
	return skill
}

// mergeObject copies the members of raw, when it is a JSON object, into
// args.
func mergeObject(args map[string]json.RawMessage, raw json.RawMessage) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		for k, v := range obj {
			args[k] = v
		}
	}
}

// inputRequest is the question of a task whose arguments are not right:
// what is wrong, as text, and the skill's parameters as data.
func (a *Agent) inputRequest(t *Tool, argErr *ArgumentError) []a2a.Part {
	var b strings.Builder
	fmt.Fprintf(&b, "%s needs more input:", t.Name)
	for _, v := range argErr.Violations {
		fmt.Fprintf(&b, "\n- %s", v)
	}
	if argErr.More > 0 {
		fmt.Fprintf(&b, "\n- and %d more", argErr.More)
	}
	b.WriteString("\nAnswer in this task with the values, as text or as a data part holding an object of arguments.")
	parts := []a2a.Part{a2a.TextPart(b.String())}
	if schema, err := t.InputSchema(); err == nil {
		if p, err := a2a.DataPart(map[string]any{"skillId": t.Name, "parameters": schema}); err == nil {
			parts = append(parts, p)
		}
	}
	return parts
}

// a2aMirror shows an A2A task's run in the space the agent serves, if
// any: reasoning/start, a thought per step and a conclusion, under the
// agent's capabilities. A reasoning/cancel of it cancels the task's run.
type a2aMirror struct {
	s     *spaceConn // nil outside a space
	c     *spaceCall
	key   string
	run   *a2a.Run
	skill string
}

// mirror starts mirroring run into the space, when the agent is in one.
func (a *Agent) mirror(run *a2a.Run, skill string, cancel context.CancelCauseFunc) *a2aMirror {
	m := &a2aMirror{run: run, skill: skill, s: a.space.Load()}
	if m.s == nil {
		return m
	}
	// The call is registered like a space call so that a reasoning/cancel
	// of its reasoning reaches it; its empty sender matches no
	// participant's notifications/cancelled.
	m.key = "a2a:" + run.TaskID
	m.c = &spaceCall{env: &protocol.Envelope{}, cancel: cancel}
	m.s.mu.Lock()
	m.s.calls[m.key] = m.c
	m.s.mu.Unlock()
	return m
}

func (m *a2aMirror) start(prompt string) {
	if m.s == nil {
		return
	}
	env := &protocol.Envelope{ID: protocol.NewID()}
	msg := fmt.Sprintf("Running %s for A2A caller %s (task %s).", m.skill, m.run.Caller, m.run.TaskID)
	if m.s.send(env, protocol.KindReasoningStart, protocol.Reasoning{Message: msg, Input: prompt}) {
		m.s.mu.Lock()
		m.c.reasoning = env.ID
		m.s.mu.Unlock()
	}
}

func (m *a2aMirror) step(st Step) {
	if m.s != nil {
		m.s.thought(m.c, st)
	}
}

// end concludes the reasoning and forgets the call.
func (m *a2aMirror) end(ctx context.Context, err error, answer string) {
	if m.s == nil {
		return
	}
	switch {
	case err != nil && ctx.Err() != nil:
		m.s.conclude(m.c, map[string]any{"message": "Cancelled: " + context.Cause(ctx).Error(), "cancelled": true})
	case err != nil:
		m.s.conclude(m.c, protocol.Reasoning{Message: "Failed: " + err.Error()})
	default:
		m.s.conclude(m.c, protocol.Reasoning{Message: "Answer: " + clip.Mark(answer, 200)})
	}
	m.s.mu.Lock()
	delete(m.s.calls, m.key)
	m.s.mu.Unlock()
}
