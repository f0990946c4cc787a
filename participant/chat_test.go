package participant_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// pendingIDs returns the ids of p's pending chats.
func pendingIDs(p *participant.Participant) []string {
	var ids []string
	for _, e := range p.PendingChats() {
		ids = append(ids, e.ID)
	}
	return ids
}

// chatPending sends text from boss to worker and waits until it is pending
// for worker; it returns the chat's id.
func chatPending(ctx context.Context, t *testing.T, boss, worker *participant.Participant, text, what string) string {
	t.Helper()
	id, err := boss.Chat(ctx, text, "worker")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, what, func() bool { return slices.Contains(pendingIDs(worker), id) })
	return id
}

func TestChatAcknowledgeAndCancel(t *testing.T) {
	boss, worker, other, seen := threeInCtlSpace(t)
	workerSaw := watch(worker.Client())
	ctx := testCtx(t)

	// A broadcast asks nobody in particular; an addressed chat waits for
	// the worker's acknowledgement.
	if _, err := boss.Chat(ctx, "hello all"); err != nil {
		t.Fatal(err)
	}
	first, err := boss.Chat(ctx, "please look", "worker")
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the chat is pending", func() bool { return slices.Equal(pendingIDs(worker), []string{first}) })
	if _, m := worker.ContextUsage(); m != 2 {
		t.Errorf("worker counted %d messages, want 2 (a broadcast and an addressed chat)", m)
	}
	if len(other.PendingChats()) != 0 {
		t.Error("a chat addressed to the worker is pending for another participant")
	}

	pending := worker.PendingChats()
	if err := worker.Acknowledge(ctx, pending[0], ""); err != nil {
		t.Fatal(err)
	}
	ack := seen.Wait(t, "the acknowledgement", kindFrom(protocol.KindChatAcknowledge, "worker", first))
	var a protocol.ChatAcknowledge
	if err := ack.DecodePayload(&a); err != nil || a.Status != "received" || !slices.Equal(ack.To, []string{"boss"}) {
		t.Errorf("acknowledgement %s to %v", ack.Payload, ack.To)
	}
	if ids := pendingIDs(worker); len(ids) != 0 {
		t.Errorf("pending after acknowledge: %v", ids)
	}

	// The sender cancels its chat: it reaches the chat's addressees and
	// clears the queue.
	second := chatPending(ctx, t, boss, worker, "never mind this", "the second chat is pending")
	// A third party's cancel does not count.
	if err := other.CancelChat(ctx, second, "not yours"); err != nil {
		t.Fatal(err)
	}
	seen.Wait(t, "the third party's cancel", kindFrom(protocol.KindChatCancel, "other", second))
	sync, err := boss.Chat(ctx, "sync")
	if err != nil {
		t.Fatal(err)
	}
	workerSaw.Wait(t, "the sync chat", func(e *protocol.Envelope) bool { return e.ID == sync })
	if !slices.Contains(pendingIDs(worker), second) {
		t.Error("a third party's cancel cleared the chat")
	}
	if err := boss.CancelChat(ctx, second, "handled_elsewhere"); err != nil {
		t.Fatal(err)
	}
	cancel := seen.Wait(t, "the sender's cancel", kindFrom(protocol.KindChatCancel, "boss", second))
	if !slices.Equal(cancel.To, []string{"worker"}) {
		t.Errorf("cancel to %v, want [worker]", cancel.To)
	}
	waitUntil(t, "the cancelled chat leaves the queue", func() bool { return len(worker.PendingChats()) == 0 })

	// The worker cancels a chat addressed to it: the cancel goes to the
	// sender.
	third := chatPending(ctx, t, boss, worker, "one more", "the third chat is pending")
	if err := worker.CancelChat(ctx, third, ""); err != nil {
		t.Fatal(err)
	}
	cancel = seen.Wait(t, "the worker's cancel", kindFrom(protocol.KindChatCancel, "worker", third))
	var c protocol.ChatCancel
	if err := cancel.DecodePayload(&c); err != nil || c.Reason != "cancelled" || !slices.Equal(cancel.To, []string{"boss"}) {
		t.Errorf("cancel %s to %v", cancel.Payload, cancel.To)
	}
	if ids := pendingIDs(worker); len(ids) != 0 {
		t.Errorf("pending after cancel: %v", ids)
	}

	// An acknowledgement sent directly through the client clears the queue
	// too, once the gateway relays it.
	fourth := chatPending(ctx, t, boss, worker, "last one", "the fourth chat is pending")
	env, _ := protocol.New(protocol.KindChatAcknowledge, protocol.ChatAcknowledge{Status: "read"})
	env.CorrelationID = []string{fourth}
	if err := worker.Client().Send(ctx, env); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the raw acknowledgement clears the queue", func() bool { return len(worker.PendingChats()) == 0 })

	// The worker's own chats count toward its context.
	_, before := worker.ContextUsage()
	id, err := worker.Chat(ctx, "done", "boss")
	if err != nil {
		t.Fatal(err)
	}
	seen.Wait(t, "the worker's chat", func(e *protocol.Envelope) bool { return e.ID == id })
	waitUntil(t, "the own chat is counted", func() bool { _, m := worker.ContextUsage(); return m == before+1 })
}

func TestChatNotAllowed(t *testing.T) {
	g := startSpace(t, ctlSpace, gateway.Options{})
	quiet := joinReady(t, g, "quiet", participant.Options{})
	ctx := testCtx(t)
	if _, err := quiet.Chat(ctx, "hello"); !errors.Is(err, participant.ErrNotAllowed) {
		t.Errorf("Chat: %v, want ErrNotAllowed", err)
	}
	if err := quiet.CancelChat(ctx, "some-chat", ""); !errors.Is(err, participant.ErrNotAllowed) {
		t.Errorf("CancelChat: %v, want ErrNotAllowed", err)
	}
	if err := quiet.Acknowledge(ctx, &protocol.Envelope{ID: "some-chat", From: "boss"}, ""); !errors.Is(err, participant.ErrNotAllowed) {
		t.Errorf("Acknowledge: %v, want ErrNotAllowed", err)
	}
	if err := quiet.Acknowledge(ctx, nil, ""); err == nil {
		t.Error("Acknowledge(nil) succeeded")
	}
	if _, err := quiet.Chat(ctx, ""); err == nil {
		t.Error("Chat with no text succeeded")
	}
}
