package participant

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/mew-protocol/mew/protocol"
)

// Chat helpers (spec §3.4): sending chats, acknowledging and cancelling them,
// and the queue of chats awaiting this participant's acknowledgement.

// Bounds of the chat book, so that a chatty space cannot grow it without
// limit: the oldest entries go first.
const (
	maxPendingChats = 1024
	maxOwnChats     = 256
)

// Defaults of Acknowledge and CancelChat.
const (
	defaultCancelReason = "cancelled"
)

// chatBook tracks chats awaiting acknowledgement. mu guards it; the
// dispatch goroutine and the callers of the chat helpers share it.
type chatBook struct {
	mu sync.Mutex
	// pending are the chats addressed to this participant by name, from
	// others, in arrival order, until it acknowledges or cancels them or
	// their sender cancels them.
	pending []*protocol.Envelope
	// own maps the ids of the participant's latest chats to their to, so
	// that CancelChat reaches the same participants; ownOrder is oldest
	// first.
	own      map[string][]string
	ownOrder []string
}

func (p *Participant) wireChat() {
	p.c.OnKind(protocol.KindChat, p.onChat)
	p.c.OnKind(protocol.KindChatAcknowledge, p.onChatClosed)
	p.c.OnKind(protocol.KindChatCancel, p.onChatClosed)
}

// onChat counts a chat toward the context and queues one addressed to this
// participant.
func (p *Participant) onChat(env *protocol.Envelope) {
	self := p.ID()
	if self == "" {
		return
	}
	mine := env.From == self
	if !mine && !env.AddressedTo(self) {
		return
	}
	var chat protocol.Chat
	if err := env.DecodePayload(&chat); err != nil {
		p.log.Debug("chat with a malformed payload", "id", env.ID, "err", err)
	}
	p.RecordContextUsage(estimateTokens(chat.Text), 1)
	if mine {
		p.chats.rememberOwn(env.ID, env.To)
		return
	}
	if env.ID == "" || !slices.Contains(env.To, self) {
		return
	}
	b := &p.chats
	b.mu.Lock()
	defer b.mu.Unlock()
	if slices.ContainsFunc(b.pending, func(e *protocol.Envelope) bool { return e.ID == env.ID }) {
		return
	}
	if len(b.pending) >= maxPendingChats {
		p.log.Warn("too many chats awaiting acknowledgement; dropping the oldest", "id", b.pending[0].ID)
		b.pending[0] = nil
		b.pending = b.pending[1:]
	}
	b.pending = append(b.pending, env)
}

// onChatClosed drops pending chats that this participant acknowledged or
// cancelled, or that their sender cancelled.
func (p *Participant) onChatClosed(env *protocol.Envelope) {
	self := p.ID()
	if self == "" {
		return
	}
	mine := env.From == self
	if !mine && env.Kind != protocol.KindChatCancel {
		return
	}
	b := &p.chats
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = slices.DeleteFunc(b.pending, func(c *protocol.Envelope) bool {
		return env.CorrelatesWith(c.ID) && (mine || c.From == env.From)
	})
}

// rememberOwn records a chat the participant sent.
func (b *chatBook) rememberOwn(id string, to []string) {
	if id == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.own == nil {
		b.own = make(map[string][]string)
	}
	if _, ok := b.own[id]; ok {
		return
	}
	if len(b.ownOrder) >= maxOwnChats {
		delete(b.own, b.ownOrder[0])
		b.ownOrder = b.ownOrder[1:]
	}
	b.own[id] = slices.Clone(to)
	b.ownOrder = append(b.ownOrder, id)
}

// forget drops chat id from the pending queue.
func (b *chatBook) forget(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending = slices.DeleteFunc(b.pending, func(c *protocol.Envelope) bool { return c.ID == id })
}

// estimateTokens estimates the tokens of text as the reference does: about
// one per four bytes, at least one for non-empty text.
func estimateTokens(text string) int {
	if text == "" {
		return 0
	}
	return (len(text) + 3) / 4
}

// Chat sends a chat with text, to the participants in to or, without any,
// to the whole space, and returns its envelope id (to correlate
// acknowledgements and answers with). It returns an error wrapping
// ErrNotAllowed when the participant may not chat, and ErrPaused while it is
// paused.
func (p *Participant) Chat(ctx context.Context, text string, to ...string) (id string, err error) {
	if text == "" {
		return "", errors.New("participant: chat: empty text")
	}
	env, err := protocol.New(protocol.KindChat, protocol.Chat{Text: text})
	if err != nil {
		return "", fmt.Errorf("participant: chat: %w", err)
	}
	if len(to) > 0 {
		env.To = slices.Clone(to)
	}
	if !p.CanSendTo(env.Kind, env.To, env.Payload) {
		return "", fmt.Errorf("%w: chat", ErrNotAllowed)
	}
	env.ID = protocol.NewID()
	p.chats.rememberOwn(env.ID, env.To)
	if err := p.Send(ctx, env); err != nil {
		return "", fmt.Errorf("participant: chat: %w", err)
	}
	return env.ID, nil
}

// Acknowledge sends chat/acknowledge for chatEnv, to its sender and
// correlated to it, with status ("" means "received"; "read" and
// "processing" are common too), and removes it from PendingChats. A paused
// participant may acknowledge. It returns an error wrapping ErrNotAllowed
// when the participant may not send chat/acknowledge.
func (p *Participant) Acknowledge(ctx context.Context, chatEnv *protocol.Envelope, status string) error {
	if chatEnv == nil || chatEnv.ID == "" {
		return errors.New("participant: acknowledge: no chat envelope id")
	}
	if status == "" {
		status = protocol.ChatAckReceived
	}
	env, err := protocol.New(protocol.KindChatAcknowledge, protocol.ChatAcknowledge{Status: status})
	if err != nil {
		return fmt.Errorf("participant: acknowledge: %w", err)
	}
	env.CorrelationID = []string{chatEnv.ID}
	if chatEnv.From != "" && chatEnv.From != p.ID() {
		env.To = []string{chatEnv.From}
	}
	if !p.CanSendTo(env.Kind, env.To, env.Payload) {
		return fmt.Errorf("%w: chat/acknowledge", ErrNotAllowed)
	}
	if err := p.Send(ctx, env); err != nil {
		return fmt.Errorf("participant: acknowledge: %w", err)
	}
	p.chats.forget(chatEnv.ID)
	return nil
}

// CancelChat sends chat/cancel for the chat chatID with reason ("" means
// "cancelled") and removes it from PendingChats. The cancel goes to the
// chat's sender when the chat is pending here, to the chat's addressees
// when this participant sent it (one of its latest chats), otherwise to the
// whole space. A paused participant may cancel. It returns an error
// wrapping ErrNotAllowed when the participant may not send chat/cancel.
func (p *Participant) CancelChat(ctx context.Context, chatID string, reason string) error {
	if chatID == "" {
		return errors.New("participant: cancel chat: no chat id")
	}
	if reason == "" {
		reason = defaultCancelReason
	}
	env, err := protocol.New(protocol.KindChatCancel, protocol.ChatCancel{Reason: reason})
	if err != nil {
		return fmt.Errorf("participant: cancel chat: %w", err)
	}
	env.CorrelationID = []string{chatID}
	env.To = p.chats.cancelTargets(chatID)
	if !p.CanSendTo(env.Kind, env.To, env.Payload) {
		return fmt.Errorf("%w: chat/cancel", ErrNotAllowed)
	}
	if err := p.Send(ctx, env); err != nil {
		return fmt.Errorf("participant: cancel chat: %w", err)
	}
	p.chats.forget(chatID)
	return nil
}

// cancelTargets says whom a chat/cancel of chat id concerns.
func (b *chatBook) cancelTargets(id string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.pending {
		if c.ID == id && c.From != "" {
			return []string{c.From}
		}
	}
	if to, ok := b.own[id]; ok {
		return slices.Clone(to)
	}
	return nil
}

// PendingChats returns the chats awaiting this participant's
// acknowledgement, oldest first: chats from others that list it in to (a
// broadcast asks nobody in particular), until it acknowledges or cancels
// them or their sender cancels them. The envelopes are copies. At most the
// latest 1024 are kept.
func (p *Participant) PendingChats() []*protocol.Envelope {
	b := &p.chats
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*protocol.Envelope, len(b.pending))
	for i, e := range b.pending {
		out[i] = e.Clone()
	}
	return out
}
