package agent

import (
	"context"
	"fmt"

	"github.com/mew-protocol/mew/llm"
)

// headroom is the share of Config.ContextTokenLimit kept free of the
// conversation when a model call is prepared.
const headroom = 0.3

// remember appends one exchange to the history, keeping the latest
// HistoryLength messages.
func (a *Agent) remember(msgs ...llm.Message) {
	a.mu.Lock()
	a.history = append(a.history, msgs...)
	if over := len(a.history) - a.cfg.HistoryLength; over > 0 {
		a.history = append([]llm.Message(nil), a.history[over:]...)
	}
	tokens, n := usage(a.history), len(a.history)
	a.mu.Unlock()
	a.p.SetContextUsage(tokens, n)
}

// History returns a copy of the conversation history the model is given:
// the questions answered (role user, Name the asker) and the answers.
func (a *Agent) History() []llm.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]llm.Message(nil), a.history...)
}

// fitHistory returns the history to give the model with the system and
// user messages, first dropping the oldest messages when all of it would
// take more than 70% of Config.ContextTokenLimit; a compaction is reported
// in participant/status.
func (a *Agent) fitHistory(ctx context.Context, fixed ...llm.Message) []llm.Message {
	budget := int(float64(a.cfg.ContextTokenLimit) * (1 - headroom))
	a.mu.Lock()
	need := usage(fixed)
	total := need + usage(a.history)
	dropped := 0
	for total > budget && dropped < len(a.history) {
		total -= usage(a.history[dropped : dropped+1])
		dropped++
	}
	if dropped > 0 {
		a.history = append([]llm.Message(nil), a.history[dropped:]...)
	}
	kept := append([]llm.Message(nil), a.history...)
	tokens := usage(a.history)
	a.mu.Unlock()
	if dropped > 0 {
		a.log.Info("agent: history compacted to keep context headroom", "dropped_messages", dropped, "tokens", tokens, "limit", a.cfg.ContextTokenLimit)
		a.p.SetContextUsage(tokens, len(kept))
		status := fmt.Sprintf("compacted:dropped %d messages", dropped)
		if err := a.p.ReportStatus(ctx, status); err != nil {
			a.log.Warn("agent: compaction not reported", "err", err)
		}
	}
	return kept
}

// forget is the participant/forget hook: it drops entries messages from
// the oldest or newest end of the history, all of them when entries is 0.
func (a *Agent) forget(_ context.Context, direction string, entries int) error {
	a.mu.Lock()
	n := len(a.history)
	if entries <= 0 || entries > n {
		entries = n
	}
	if direction == "newest" {
		a.history = append([]llm.Message(nil), a.history[:n-entries]...)
	} else {
		a.history = append([]llm.Message(nil), a.history[entries:]...)
	}
	tokens, msgs := usage(a.history), len(a.history)
	a.mu.Unlock()
	a.p.SetContextUsage(tokens, msgs)
	return nil
}

// clear is the participant/clear hook: it drops the whole history.
func (a *Agent) clear(context.Context) error {
	a.mu.Lock()
	a.history = nil
	a.mu.Unlock()
	return nil
}

// compact is the participant/compact hook: it drops the older half of the
// history and says how much that freed.
func (a *Agent) compact(context.Context) (freedTokens, freedMessages int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := (len(a.history) + 1) / 2
	freedTokens = usage(a.history[:n])
	a.history = append([]llm.Message(nil), a.history[n:]...)
	return freedTokens, n, nil
}

// usage estimates the tokens of msgs: about one per four bytes of text.
func usage(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += (len(m.Content) + 3) / 4
		for _, c := range m.ToolCalls {
			n += (len(c.Name) + len(c.Arguments) + 3) / 4
		}
	}
	return n
}
