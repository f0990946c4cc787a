package a2abridge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/participant"
)

// SkillSchema is the input schema of every skill's tool: A2A skills
// describe no parameters, so a call gives the message for the agent, an
// optional object sent as a data part, and the task to continue when the
// agent asked for input.
const SkillSchema = `{"type":"object","properties":{` +
	`"message":{"type":"string","description":"What to ask the agent, in words."},` +
	`"data":{"type":"object","description":"Structured input for the skill, sent to the agent as a data part."},` +
	`"task_id":{"type":"string","description":"The task to continue: one whose answer asked you for input."}},` +
	`"required":["message"],"additionalProperties":false}`

// maxToolName bounds a tool name made from a skill id.
const maxToolName = 64

// toolArgs are the arguments of a skill's tool (SkillSchema).
type toolArgs struct {
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	TaskID  string          `json:"task_id,omitempty"`
}

// waiting is a tool call's task waiting for input: only the participant
// whose call it answered may continue it.
type waiting struct {
	owner, contextID string
	since            time.Time
}

// ToolName is the name of a skill's tool: the skill's id, with each
// character outside letters, digits, '_', '-' and '.' replaced by '_',
// at most 64 bytes (MCP's advice for tool names).
func ToolName(skillID string) string {
	var b strings.Builder
	for _, r := range skillID {
		if b.Len() >= maxToolName {
			break
		}
		if r < 0x80 && (r == '_' || r == '-' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "skill"
	}
	return b.String()
}

// skillTool is the tool of skill s: a call is a message to the agent
// naming the skill (metadata skillId), and its task's artifacts are the
// result.
func (b *Bridge) skillTool(s a2a.AgentSkill, name string) participant.Tool {
	desc := orDefault(s.Description, s.Name)
	desc = fmt.Sprintf("%s (skill %q of the A2A agent %s)", clipText(desc, 2000), s.ID, b.card.Name)
	if len(s.Examples) > 0 {
		ex := s.Examples[:min(len(s.Examples), 3)]
		for i := range ex {
			ex[i] = clipText(ex[i], 200)
		}
		desc += ". Examples: " + strings.Join(ex, "; ")
	}
	return participant.Tool{
		Name:        name,
		Description: desc,
		InputSchema: json.RawMessage(SkillSchema),
		Execute: func(ctx context.Context, raw json.RawMessage) (any, error) {
			return b.callSkill(ctx, s, name, raw)
		},
	}
}

// callSkill runs one tool call of skill s.
func (b *Bridge) callSkill(ctx context.Context, s a2a.AgentSkill, name string, raw json.RawMessage) (any, error) {
	var in toolArgs
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if strings.TrimSpace(in.Message) == "" && len(in.Data) == 0 {
		return nil, errors.New("give the agent a message (or data)")
	}
	caller, key := "", uuid.NewString()
	if env, ok := participant.ToolCallEnvelope(ctx); ok {
		caller, key = env.From, env.ID
	}
	var contextID string
	if in.TaskID != "" {
		w, ok := b.takeWaiting(in.TaskID, caller)
		if !ok {
			return nil, fmt.Errorf("no task %q waits for your input", clipText(in.TaskID, 64))
		}
		contextID = w.contextID
	}
	j := &job{key: key, asker: caller}
	if !b.admit(j) {
		return nil, fmt.Errorf("%w (%d); try again later", ErrBusy, b.opts.MaxTasks)
	}
	defer b.release(j)
	tctx, cancel := context.WithTimeoutCause(ctx, b.opts.TaskTimeout, errTaskTimeout)
	defer cancel()
	stop := context.AfterFunc(b.work.Context(), func() { cancel() })
	defer stop()
	o, err := b.exchange(tctx, userMessage(in.Message, in.Data, s.ID, in.TaskID, contextID), nil)
	if err != nil {
		b.cancelRemote(context.Background(), o, err.Error())
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("canceled: %w", context.Cause(ctx))
		case b.work.Context().Err() != nil:
			return nil, errShutdown
		case errors.Is(err, errTaskTimeout) || errors.Is(context.Cause(tctx), errTaskTimeout):
			return nil, fmt.Errorf("%s did not finish within %s; the task was canceled", b.card.Name, b.opts.TaskTimeout)
		}
		return nil, fmt.Errorf("%s: %w", b.card.Name, err)
	}
	return b.skillResult(name, caller, o), nil
}

// skillResult is the tool result of an exchange: the artifacts (or the
// reply) as content; a question as text saying how to answer it; a task
// that failed, was rejected or canceled as an error. Its structured
// content names the task and its state.
func (b *Bridge) skillResult(name, caller string, o *outcome) *participant.ToolResult {
	st := map[string]string{"state": stateName(o.state)}
	if o.taskID != "" {
		st["task_id"] = o.taskID
	}
	res := &participant.ToolResult{}
	switch {
	case o.reply != nil || o.state == a2a.TaskStateCompleted:
		if o.reply != nil {
			st["state"] = "message"
		}
		res.Content = contents(o)
	case o.state == a2a.TaskStateInputRequired:
		b.addWaiting(o.taskID, caller, o.contextID)
		q := orDefault(o.status, "(it asks for more input without saying what)")
		st["question"] = q
		res.Content = []participant.Content{participant.TextContent(fmt.Sprintf(
			"%s asks: %s\nTo answer, call %s again with task_id %q and the answer as message.", b.card.Name, q, name, o.taskID))}
	default:
		res.IsError = true
		res.Content = []participant.Content{participant.TextContent(fmt.Sprintf("%s: the task %s: %s",
			b.card.Name, stateName(o.state), orDefault(o.status, "(no reason given)")))}
	}
	res.StructuredContent, _ = json.Marshal(st)
	return res
}

// contents are an outcome's parts as MCP content: images as images, the
// rest as text.
func contents(o *outcome) []participant.Content {
	var parts []a2a.Part
	if o.reply != nil {
		parts = o.reply.Parts
	}
	for _, a := range o.artifacts {
		parts = append(parts, a.Parts...)
	}
	var out []participant.Content
	for _, p := range parts {
		if p.Kind() == "raw" && strings.HasPrefix(p.MediaType, "image/") {
			out = append(out, participant.Content{Type: "image", Data: base64.StdEncoding.EncodeToString(p.Raw), MimeType: p.MediaType})
			continue
		}
		if t := partText(p); t != "" {
			out = append(out, participant.TextContent(t))
		}
	}
	if len(out) == 0 {
		out = append(out, participant.TextContent(o.answer()))
	}
	if o.clipped && len(out) > 0 {
		out = append(out, participant.TextContent("[cut: the agent's answer is longer than the bridge takes]"))
	}
	return out
}

// addWaiting records a tool call's task that waits for input. Past
// 4×Options.MaxTasks, or Options.QuestionTimeout, a waiting task is
// canceled at the agent.
func (b *Bridge) addWaiting(taskID, owner, contextID string) {
	if taskID == "" {
		return
	}
	now := time.Now()
	var drop []string
	b.mu.Lock()
	for id, w := range b.waiting {
		if now.Sub(w.since) > b.opts.QuestionTimeout {
			drop = append(drop, id)
			delete(b.waiting, id)
		}
	}
	for len(b.waiting) >= 4*b.opts.MaxTasks {
		oldest := ""
		for id, w := range b.waiting {
			if oldest == "" || w.since.Before(b.waiting[oldest].since) {
				oldest = id
			}
		}
		drop = append(drop, oldest)
		delete(b.waiting, oldest)
	}
	b.waiting[taskID] = &waiting{owner: owner, contextID: contextID, since: now}
	b.mu.Unlock()
	if len(drop) > 0 {
		b.goOwned(func(context.Context) {
			for _, id := range drop {
				b.cancelRemote(context.Background(), &outcome{taskID: id, state: a2a.TaskStateInputRequired}, "nobody answered its question")
			}
		})
	}
}

// takeWaiting takes the waiting task id when caller owns it.
func (b *Bridge) takeWaiting(id, caller string) (*waiting, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.waiting[id]
	if !ok || w.owner != caller {
		return nil, false // another's task is as unknown as none
	}
	delete(b.waiting, id)
	return w, true
}

// cancelWaiting cancels at the agent the tool calls' tasks still waiting
// for input, when the bridge stops.
func (b *Bridge) cancelWaiting() {
	b.mu.Lock()
	ids := make([]string, 0, len(b.waiting))
	for id := range b.waiting {
		ids = append(ids, id)
	}
	clear(b.waiting)
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	for _, id := range ids {
		b.cancelRemote(ctx, &outcome{taskID: id, state: a2a.TaskStateInputRequired}, errShutdown.Error())
	}
}
