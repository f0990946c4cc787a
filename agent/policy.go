package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/protocol"
)

// classifyTimeout bounds one classifier call.
const classifyTimeout = 30 * time.Second

// defaultClassifyPrompt is the classifier's instructions (Prompts.Classify).
const defaultClassifyPrompt = `You are {name}, an agent in a space shared by people, agents and tools.
Your tools: {tools}
Recent conversation:
{context}

Decide whether you should answer the message the user gives you next. Answer when it is a question
or request you can help with, or when it concerns your tools. Stay silent when it is talk between
others, meant for someone else, or already answered.
Reply with one JSON object and nothing else:
{"shouldRespond": true or false, "confidence": a number from 0 to 1, "reason": "a few words"}`

// verdict is how the agent takes a chat.
type verdict int

const (
	ignore   verdict = iota // not for this agent
	answer                  // addressed to it or mentioning it
	classify                // a broadcast it may answer if the classifier agrees
)

// item is a chat waiting in the queue.
type item struct {
	env       *protocol.Envelope
	text      string
	classify  bool      // ask the classifier before answering
	floor     bool      // claim the floor before answering
	notBefore time.Time // with floor: the end of the random wait
}

// line is one chat of the space, as the classifier sees the conversation.
type line struct{ from, text string }

// judge applies the response policy to a chat and its text.
func (a *Agent) judge(env *protocol.Envelope, text string) verdict {
	self := a.p.ID()
	if env.From == "" || env.From == self || env.From == protocol.GatewayID {
		return ignore
	}
	if a.isReplyToAnswer(env) {
		return ignore
	}
	cr := a.cfg.ChatResponse
	if !env.IsBroadcast() {
		if env.AddressedTo(self) && on(cr.RespondToDirect) {
			return answer
		}
		return ignore
	}
	if mentions(text, self) || (a.cfg.Name != "" && mentions(text, a.cfg.Name)) {
		if on(cr.RespondToMentions) {
			return answer
		}
		return ignore
	}
	if !a.cfg.AutoRespond || a.mentionsOther(text) {
		return ignore
	}
	if !a.allowUnaddressed(time.Now()) {
		a.log.Info("agent: answer rate reached; broadcast chat ignored", "chat", env.ID, "per_minute", cr.AnswersPerMinute)
		return ignore
	}
	return classify
}

// mentionsOther reports whether text mentions another participant known to
// the agent: a chat for them.
func (a *Agent) mentionsOther(text string) bool {
	if !strings.Contains(text, "@") {
		return false
	}
	for id := range a.p.DiscoveryStatus() {
		if id != a.p.ID() && mentions(text, id) {
			return true
		}
	}
	return false
}

// allowUnaddressed reports whether one more answer to an unaddressed chat
// fits in the last minute, and counts it when it does.
func (a *Agent) allowUnaddressed(now time.Time) bool {
	limit := a.cfg.ChatResponse.AnswersPerMinute
	if limit < 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	cut := 0
	for cut < len(a.unaddressed) && now.Sub(a.unaddressed[cut]) >= time.Minute {
		cut++
	}
	a.unaddressed = a.unaddressed[cut:]
	if len(a.unaddressed) >= limit {
		return false
	}
	a.unaddressed = append(a.unaddressed, now)
	return true
}

// heard remembers a chat of the space for the classifier's context.
func (a *Agent) heard(from, text string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recent = append(a.recent, line{from, summary(text)})
	if over := len(a.recent) - a.cfg.ChatResponse.ContextWindow; over > 0 {
		a.recent = append([]line(nil), a.recent[over:]...)
	}
}

// conversation returns the chats heard, one a line, leaving out the last
// one when it is the chat being classified.
func (a *Agent) conversation(skip string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	lines := a.recent
	if n := len(lines); n > 0 && lines[n-1].text == summary(skip) {
		lines = lines[:n-1]
	}
	if len(lines) == 0 {
		return "(nothing yet)"
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s: %s\n", l.from, l.text)
	}
	return strings.TrimRight(b.String(), "\n")
}

// classification is the classifier's answer.
type classification struct {
	ShouldRespond bool    `json:"shouldRespond"`
	Confidence    float64 `json:"confidence"`
	Reason        string  `json:"reason"`
}

// shouldAnswer asks the classifier whether to answer an unaddressed chat.
// Without a classifier answer (a classifier that failed or answered
// something else than the JSON asked for), the agent answers questions:
// texts with a question mark, when RespondToQuestions. The offline model
// answers questions and the requests that one of the tools fits.
func (a *Agent) shouldAnswer(ctx context.Context, it *item) bool {
	fallback := on(a.cfg.ChatResponse.RespondToQuestions) && strings.Contains(it.text, "?")
	tools := a.modelTools(ctx, "")
	ctx, cancel := context.WithTimeout(ctx, classifyTimeout)
	defer cancel()
	if a.provider.Name() == "offline" {
		// The rule-based model cannot judge a conversation, but it can tell
		// whether one of the tools fits the request.
		resp, err := a.provider.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: it.text}}, Tools: llmTools(tools)})
		return fallback || (err == nil && len(resp.ToolCalls) > 0)
	}
	tmpl := a.cfg.Prompts.Classify
	if tmpl == "" {
		tmpl = defaultClassifyPrompt
	}
	prompt := render(tmpl, map[string]string{
		"input":   it.text,
		"name":    a.displayName(),
		"tools":   toolList(llmTools(tools)),
		"context": a.conversation(it.text),
	})
	resp, err := a.provider.Complete(ctx, llm.Request{
		Model: a.cfg.Model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: prompt},
			{Role: llm.RoleUser, Content: it.text, Name: it.env.From},
		},
	})
	if err != nil {
		a.log.Warn("agent: classifier failed; answering questions only", "chat", it.env.ID, "err", err)
		return fallback
	}
	c, ok := parseClassification(resp.Content)
	if !ok {
		a.log.Warn("agent: classifier answer is not the JSON asked for; answering questions only", "chat", it.env.ID, "answer", summary(resp.Content))
		return fallback
	}
	yes := c.ShouldRespond && c.Confidence >= a.cfg.ChatResponse.ConfidenceThreshold
	a.log.Info("agent: classified", "chat", it.env.ID, "respond", yes, "confidence", c.Confidence, "reason", c.Reason)
	return yes
}

// parseClassification reads the JSON object in a classifier's answer,
// which models may wrap in prose or a code fence.
func parseClassification(text string) (classification, bool) {
	i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}')
	if i < 0 || j < i {
		return classification{}, false
	}
	var raw struct {
		ShouldRespond *bool    `json:"shouldRespond"`
		Confidence    *float64 `json:"confidence"`
		Reason        string   `json:"reason"`
	}
	if err := json.Unmarshal([]byte(text[i:j+1]), &raw); err != nil || raw.ShouldRespond == nil {
		return classification{}, false
	}
	c := classification{ShouldRespond: *raw.ShouldRespond, Reason: raw.Reason, Confidence: 1}
	if raw.Confidence != nil {
		c.Confidence = *raw.Confidence
	}
	return c, true
}

// render fills the {name} placeholders of tmpl in one pass: a value is
// inserted as it is and never expanded again. Unknown placeholders stay.
func render(tmpl string, values map[string]string) string {
	pairs := make([]string, 0, 2*len(values))
	for k, v := range values {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(tmpl)
}

// toolList describes tools one a line for a prompt.
func toolList(tools []llm.Tool) string {
	if len(tools) == 0 {
		return "(none)"
	}
	var b strings.Builder
	for _, t := range tools {
		b.WriteString("\n- " + t.Name)
		if t.Description != "" {
			b.WriteString(": " + t.Description)
		}
	}
	return b.String()
}

// displayName is the name the agent goes by.
func (a *Agent) displayName() string {
	if a.cfg.Name != "" {
		return a.cfg.Name
	}
	return a.p.ID()
}
