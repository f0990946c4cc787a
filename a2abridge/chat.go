package a2abridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/protocol"
)

// Reasons a task ends early, as context causes.
var (
	errShutdown    = errors.New("the bridge is stopping")
	errTaskTimeout = errors.New("the task took longer than the bridge waits")
)

// canceledError: a participant canceled the task in the space.
type canceledError struct{ by, reason string }

func (e *canceledError) Error() string { return "canceled by " + e.by + ": " + e.reason }

// job is a task of the agent under way for the space: a chat's, or a
// tool call's.
type job struct {
	key    string // the id of the envelope that started it
	asker  string
	chat   string // the chat answered; "" for a tool call
	cancel context.CancelCauseFunc
	// answers carries the answer to the agent's question, one at a time.
	answers chan answer

	// Guarded by Bridge.mu.
	reasoning string // the reasoning/start id, "" without one
	question  string // the question's chat id while it waits for an answer
	asked     int    // orders questions: the latest waiting one takes an unaddressed answer
}

// answer is a chat that answers the agent's question.
type answer struct{ from, text string }

// admit records j unless Options.MaxTasks jobs are under way.
func (b *Bridge) admit(j *job) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.jobs) >= b.opts.MaxTasks {
		return false
	}
	if _, dup := b.jobs[j.key]; dup {
		return false
	}
	b.jobs[j.key] = j
	return true
}

func (b *Bridge) release(j *job) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.jobs[j.key] == j {
		delete(b.jobs, j.key)
	}
}

// mayAnswer reports whether from may answer j's questions and cancel it:
// its asker, and Options.Answerers.
func (b *Bridge) mayAnswer(j *job, from string) bool {
	return from == j.asker || slices.Contains(b.opts.Answerers, from)
}

// onChat starts a task for a chat addressed to the bridge (listed in to,
// or a broadcast that mentions it), or takes it as the answer to a
// question of the agent. It runs on the dispatch goroutine.
func (b *Bridge) onChat(env *protocol.Envelope) {
	self := b.p.ID()
	if self == "" || env.From == self || env.From == "" || env.ID == "" {
		return
	}
	var c protocol.Chat
	if err := env.DecodePayload(&c); err != nil || strings.TrimSpace(c.Text) == "" {
		return
	}
	if !slices.Contains(env.To, self) && !(env.IsBroadcast() && protocol.Mentions(c.Text, self)) {
		return
	}
	if j, ok := b.questionFor(env); ok {
		b.takeAnswer(j, env, c.Text)
		return
	}
	ctx, cancel := context.WithCancelCause(b.work.Context())
	j := &job{key: env.ID, asker: env.From, chat: env.ID, cancel: cancel, answers: make(chan answer, 1)}
	if !b.admit(j) {
		cancel(nil)
		b.log.Warn("chat refused: too many tasks under way", "chat", env.ID, "from", env.From)
		b.goOwned(func(context.Context) {
			b.sendChat([]string{env.From}, env.ID, fmt.Sprintf("%s is busy with %d tasks; ask again in a while.", b.card.Name, b.opts.MaxTasks))
		})
		return
	}
	if !b.goOwned(func(context.Context) { b.runChat(ctx, j, env, c.Text) }) {
		b.release(j)
		cancel(nil)
	}
}

// questionFor returns the job whose question env answers: the one it is
// correlated to, else the latest question to its sender.
func (b *Bridge) questionFor(env *protocol.Envelope) (*job, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var latest *job
	for _, j := range b.jobs {
		if j.question == "" {
			continue
		}
		if env.CorrelatesWith(j.question) {
			return j, true
		}
		if j.asker == env.From && (latest == nil || j.asked > latest.asked) {
			latest = j
		}
	}
	return latest, latest != nil
}

// takeAnswer hands an answer to j, when its sender may answer.
func (b *Bridge) takeAnswer(j *job, env *protocol.Envelope, text string) {
	if !b.mayAnswer(j, env.From) {
		b.log.Info("an answer from a participant that may not answer", "from", env.From, "asker", j.asker)
		b.goOwned(func(context.Context) {
			b.sendChat([]string{env.From}, env.ID, fmt.Sprintf("Only %s may answer that question of %s.", strings.Join(b.answerers(j), ", "), b.card.Name))
		})
		return
	}
	b.mu.Lock()
	j.question = ""
	b.mu.Unlock()
	select {
	case j.answers <- answer{from: env.From, text: text}:
	default: // an answer is already on its way
	}
}

func (b *Bridge) answerers(j *job) []string {
	return slices.Compact(append([]string{j.asker}, b.opts.Answerers...))
}

// onCancel cancels the chat tasks that a chat/cancel (of the chat, or of
// the agent's question) or a reasoning/cancel (of the task's reasoning)
// names, when its sender may. It runs on the dispatch goroutine.
func (b *Bridge) onCancel(env *protocol.Envelope) {
	self := b.p.ID()
	if self == "" || env.From == self || !env.AddressedTo(self) {
		return
	}
	var c struct {
		Reason string `json:"reason"`
	}
	_ = env.DecodePayload(&c)
	if c.Reason == "" {
		c.Reason = "canceled"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, j := range b.jobs {
		if j.chat == "" || !b.mayAnswer(j, env.From) {
			continue
		}
		named := false
		switch env.Kind {
		case protocol.KindChatCancel:
			named = env.CorrelatesWith(j.chat) || (j.question != "" && env.CorrelatesWith(j.question))
		case protocol.KindReasoningCancel:
			named = j.reasoning != "" && env.Context == j.reasoning
		}
		if named {
			b.log.Info("task canceled in the space", "chat", j.chat, "by", env.From)
			j.cancel(&canceledError{by: env.From, reason: clipText(c.Reason, 200)})
		}
	}
}

// runChat asks the agent for the chat's answer and says it in the space:
// the task's progress as reasoning, its questions as chats to the asker,
// the answer as a chat correlated to the question.
func (b *Bridge) runChat(ctx context.Context, j *job, env *protocol.Envelope, text string) {
	defer b.release(j)
	defer j.cancel(nil)
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	_ = b.p.Acknowledge(sctx, env, "processing")
	cancel()
	rid := b.send(protocol.KindReasoningStart, nil, []string{j.chat}, "",
		protocol.Reasoning{Message: fmt.Sprintf("Asking %s (A2A agent)", b.card.Name), Input: clipText(text, 2000)})
	b.mu.Lock()
	j.reasoning = rid
	b.mu.Unlock()
	show := b.thoughts(j)
	msg := userMessage(text, nil, "", "", "")
	for {
		tctx, tcancel := context.WithTimeoutCause(ctx, b.opts.TaskTimeout, errTaskTimeout)
		o, err := b.exchange(tctx, msg, show)
		tcancel()
		if err != nil {
			b.chatFailed(ctx, j, o, err)
			return
		}
		switch {
		case o.reply != nil || o.state == a2a.TaskStateCompleted:
			ans := o.answer()
			if ans == "" {
				ans = b.card.Name + " finished with no answer."
			}
			b.conclude(j, map[string]any{"message": "Answer: " + clipText(ans, 200)})
			b.reply(j, ans)
			return
		case o.state == a2a.TaskStateInputRequired:
			a, ok := b.ask(ctx, j, o)
			if !ok {
				return
			}
			msg = userMessage(a.text, nil, "", o.taskID, o.contextID)
		case o.state == a2a.TaskStateAuthRequired:
			b.cancelRemote(context.Background(), o, "it asks for authorization")
			b.end(j, fmt.Sprintf("%s asks for authorization the bridge cannot give: %s. The task was canceled.", b.card.Name, orDefault(o.status, "(no reason given)")))
			return
		case o.state == a2a.TaskStateCanceled:
			b.end(j, fmt.Sprintf("%s canceled the task: %s", b.card.Name, orDefault(o.status, "(no reason given)")))
			return
		default: // failed, rejected
			b.end(j, fmt.Sprintf("%s could not answer (the task %s): %s", b.card.Name, stateName(o.state), orDefault(o.status, "(no reason given)")))
			return
		}
	}
}

// chatFailed ends a chat's task that did not settle: canceled in the
// space (said in the reasoning only, as an agent does), the bridge
// stopping, or the agent failing the bridge's limits or its protocol.
// The task is canceled at the agent.
func (b *Bridge) chatFailed(ctx context.Context, j *job, o *outcome, err error) {
	cause := context.Cause(ctx)
	var ce *canceledError
	switch {
	case errors.As(cause, &ce):
		b.cancelRemote(context.Background(), o, ce.Error())
		b.conclude(j, map[string]any{"message": "Cancelled: " + ce.reason, "cancelled": true, "reason": ce.reason})
		return
	case errors.Is(cause, errShutdown):
		b.cancelRemote(context.Background(), o, "the bridge is stopping")
		b.end(j, fmt.Sprintf("The bridge to %s is stopping; the task was canceled.", b.card.Name))
		return
	case errors.Is(err, errTaskTimeout):
		err = fmt.Errorf("no answer within %s", b.opts.TaskTimeout)
	}
	b.log.Info("the agent's task failed", "chat", j.chat, "task", o.taskID, "err", err)
	b.cancelRemote(context.Background(), o, err.Error())
	what := "The task was canceled."
	if o.taskID == "" || o.state.Terminal() {
		what = ""
	}
	b.end(j, strings.TrimSpace(fmt.Sprintf("%s could not answer: %s. %s", b.card.Name, clipText(err.Error(), 500), what)))
}

// ask puts the agent's question to the asker and waits for the answer, a
// cancel, or Options.QuestionTimeout.
func (b *Bridge) ask(ctx context.Context, j *job, o *outcome) (answer, bool) {
	q := orDefault(o.status, "(it asks for more input without saying what)")
	id := b.sendChat([]string{j.asker}, j.chat, fmt.Sprintf("%s asks: %s\n\n(Answer in a chat to %s within %s.)",
		b.card.Name, q, b.p.ID(), b.opts.QuestionTimeout))
	if id == "" {
		b.cancelRemote(context.Background(), o, "the question could not be sent")
		b.conclude(j, map[string]any{"message": "Failed: the agent's question could not be put to " + j.asker})
		return answer{}, false
	}
	b.mu.Lock()
	j.question = id
	b.asked++
	j.asked = b.asked
	b.mu.Unlock()
	b.thought(j, "Waiting for "+j.asker+" to answer: "+clipText(q, 200))
	t := time.NewTimer(b.opts.QuestionTimeout)
	defer t.Stop()
	select {
	case a := <-j.answers:
		b.thought(j, "Answered by "+a.from)
		return a, true
	case <-ctx.Done():
		b.chatFailed(ctx, j, o, context.Cause(ctx))
	case <-t.C:
		b.mu.Lock()
		j.question = ""
		b.mu.Unlock()
		b.cancelRemote(context.Background(), o, "no answer to its question")
		b.end(j, fmt.Sprintf("No answer to %s's question within %s; the task was canceled.", b.card.Name, b.opts.QuestionTimeout))
	}
	return answer{}, false
}

// thoughts returns the function that shows a task's progress as
// reasoning/thought envelopes, at most Options.MaxThoughts of them.
func (b *Bridge) thoughts(j *job) func(progress) {
	n := 0
	return func(p progress) {
		n++
		switch {
		case n > b.opts.MaxThoughts+1:
			return
		case n == b.opts.MaxThoughts+1:
			b.thought(j, "(more progress of the task is not shown)")
			return
		}
		msg := p.text
		if p.artifact != "" {
			msg = "Receiving " + p.artifact
		}
		b.thought(j, fmt.Sprintf("%s (%s)", clipText(msg, 1000), stateName(p.state)))
	}
}

func (b *Bridge) thought(j *job, text string) {
	b.mu.Lock()
	rid := j.reasoning
	b.mu.Unlock()
	if rid != "" {
		b.send(protocol.KindReasoningThought, nil, nil, rid, protocol.Reasoning{Message: text})
	}
}

// conclude ends the job's reasoning with payload.
func (b *Bridge) conclude(j *job, payload map[string]any) {
	b.mu.Lock()
	rid := j.reasoning
	b.mu.Unlock()
	if rid != "" {
		b.send(protocol.KindReasoningConclusion, nil, nil, rid, payload)
	}
}

// end concludes the reasoning and tells the asker why there is no
// answer.
func (b *Bridge) end(j *job, text string) {
	b.conclude(j, map[string]any{"message": clipText(text, 500)})
	b.reply(j, text)
}

// reply chats text to the asker, correlated to the chat answered.
func (b *Bridge) reply(j *job, text string) { b.sendChat([]string{j.asker}, j.chat, text) }

// sendChat sends a chat to to, correlated to corr, and returns its id
// ("" when it was not sent).
func (b *Bridge) sendChat(to []string, corr, text string) string {
	return b.send(protocol.KindChat, to, []string{corr}, "", protocol.Chat{Text: clipText(text, b.opts.MaxAnswerBytes+200)})
}

// send sends an envelope the bridge's capabilities allow, within
// sendTimeout, and returns its id ("" when it was not sent).
func (b *Bridge) send(kind string, to, corr []string, reasoning string, payload any) string {
	env, err := protocol.New(kind, payload)
	if err != nil {
		b.log.Error("an envelope that cannot be encoded", "kind", kind, "err", err)
		return ""
	}
	env.ID, env.To, env.CorrelationID, env.Context = protocol.NewID(), to, corr, reasoning
	if !b.p.CanSend(env.Kind, env.Payload) {
		b.log.Debug("not sent: not allowed by the bridge's capabilities", "kind", kind)
		return ""
	}
	// Not the job's context: a canceled task still says so.
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	if err := b.p.Send(ctx, env); err != nil {
		b.log.Info("not sent", "kind", kind, "err", err)
		return ""
	}
	return env.ID
}
