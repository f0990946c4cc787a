package agent

import (
	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/protocol"
)

// The chats waiting for an answer are shared fairly among their senders: a
// participant that chats fast cannot push everyone else's questions out.
//
//   - When the queue is full, the sender with the most chats waiting (the
//     new one counted) loses its oldest; a new chat that would be its
//     sender's only one is refused instead, waiting for its turn would
//     take another's.
//   - The next chat answered is the oldest of a sender other than the one
//     answered last, when there is one: two askers take turns.
//   - A chat is acknowledged ("processing") only once it has a place in the
//     queue, and its sender is told, in words, when it is dropped or
//     refused: nobody waits for an answer that will not come.

// admitLocked puts it in the queue, making room by the rule above. It
// returns the chat that lost its place (it, when it was refused), or nil.
// mu must be held.
func (a *Agent) admitLocked(it *item) (lost *item) {
	if len(a.queue) < a.cfg.QueueSize {
		a.queue = append(a.queue, it)
		return nil
	}
	counts := map[string]int{}
	for _, q := range a.queue {
		counts[q.env.From]++
	}
	// The largest sharer, counting the new chat; ties go to the sender of
	// the new chat, which then waits its turn rather than take another's.
	victim, most := it.env.From, counts[it.env.From]+1
	for from, n := range counts {
		if n > most {
			victim, most = from, n
		}
	}
	for i, q := range a.queue {
		if q.env.From == victim {
			lost = q
			a.queue = append(a.queue[:i:i], a.queue[i+1:]...)
			a.queue = append(a.queue, it)
			return lost
		}
	}
	return it // its sender has nothing waiting, and everyone else one each
}

// dequeue takes the next chat to answer, nil when there is none: the
// oldest of a sender other than the last one answered, else the oldest.
func (a *Agent) dequeue() *item {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.queue) == 0 {
		return nil
	}
	i := 0
	for j, q := range a.queue {
		if q.env.From != a.lastServed {
			i = j
			break
		}
	}
	it := a.queue[i]
	a.queue = append(a.queue[:i:i], a.queue[i+1:]...)
	a.lastServed = it.env.From
	return it
}

// tellDropped tells the sender of a chat that lost its place that it will
// not be answered, correlated to it.
func (a *Agent) tellDropped(it *item) {
	text := "I have too many questions waiting, so I will not get to yours (\"" + clip.Runes(it.text, 80) + "\"). Please ask again in a moment."
	env := &protocol.Envelope{To: []string{it.env.From}, CorrelationID: []string{it.env.ID}}
	if err := a.send(a.ctx, env, protocol.KindChat, protocol.Chat{Text: text}); err != nil && a.ctx.Err() == nil {
		a.log.Warn("agent: could not tell a dropped chat's sender", "chat", it.env.ID, "err", err)
	}
}
