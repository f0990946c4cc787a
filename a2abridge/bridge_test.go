package a2abridge_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/a2abridge"
	"github.com/mew-protocol/mew/protocol"
)

// A chat to the bridge is a task of the agent: acknowledged, its progress
// as reasoning, its answer a chat to the asker correlated to the chat;
// the card is in the bridge's status.
func TestChatAnswered(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		g := startSpace(t)
		r := startRemote(t, streaming)
		human := joinAs(t, g, "human-token")
		seen := watch(human)
		b := startBridge(t, g, r.URL, a2abridge.Options{})
		if b.Card().Name != "Helper" {
			t.Fatalf("card %+v", b.Card())
		}
		status := seen.wait(t, "the bridge's status", protocol.KindParticipantStatus, fromHelper(""))
		var st struct {
			A2A struct {
				URL  string `json:"url"`
				Card struct {
					Name   string `json:"name"`
					Skills []struct {
						ID string `json:"id"`
					} `json:"skills"`
				} `json:"card"`
			} `json:"a2a"`
		}
		if err := json.Unmarshal(status.Payload, &st); err != nil || st.A2A.Card.Name != "Helper" || len(st.A2A.Card.Skills) != 3 ||
			!strings.HasPrefix(st.A2A.URL, r.URL) {
			t.Fatalf("status %s: %v", status.Payload, err)
		}

		id, err := human.Chat(testCtx(t), "hello there", "helper")
		if err != nil {
			t.Fatal(err)
		}
		seen.wait(t, "the acknowledgement", protocol.KindChatAcknowledge, fromHelper(id))
		start := seen.wait(t, "the reasoning", protocol.KindReasoningStart, fromHelper(id))
		if streaming { // polled, the task is seen once it is done
			thought := seen.wait(t, "a thought", protocol.KindReasoningThought, func(env *protocol.Envelope) bool { return env.Context == start.ID })
			if !strings.Contains(string(thought.Payload), "hello there") {
				t.Errorf("thought %s", thought.Payload)
			}
		}
		seen.wait(t, "the conclusion", protocol.KindReasoningConclusion, func(env *protocol.Envelope) bool { return env.Context == start.ID })
		answer := seen.wait(t, "the answer", protocol.KindChat, fromHelper(id))
		if got := chatText(answer); got != "echo: hello there" || !slices.Equal(answer.To, []string{"human"}) {
			t.Errorf("streaming %v: answer %q to %v", streaming, got, answer.To)
		}

		// A broadcast that mentions the bridge is for it; one that does
		// not is not.
		if _, err := human.Chat(testCtx(t), "just chatting"); err != nil {
			t.Fatal(err)
		}
		id, _ = human.Chat(testCtx(t), "@helper how are you?")
		if got := chatText(seen.wait(t, "the answer to a mention", protocol.KindChat, fromHelper(id))); got != "echo: @helper how are you?" {
			t.Errorf("answer %q", got)
		}
		if n := len(r.skillIDs()); n != 2 {
			t.Errorf("the agent got %d messages, want 2", n)
		}
		_ = human.Close()
	}
}

// The agent's question is put to the asker; the asker's next chat answers
// it and the task goes on. Nobody else may answer.
func TestQuestionAnswered(t *testing.T) {
	g := startSpace(t)
	r := startRemote(t, true)
	human := joinAs(t, g, "human-token")
	other := joinAs(t, g, "other-token")
	seen, othersSeen := watch(human), watch(other)
	startBridge(t, g, r.URL, a2abridge.Options{})

	id, _ := human.Chat(testCtx(t), "book a trip", "helper")
	q := seen.wait(t, "the question", protocol.KindChat, fromHelper(id))
	if got := chatText(q); !strings.HasPrefix(got, "Helper asks: Which city?") {
		t.Fatalf("question %q", got)
	}

	// other answers, correlated to the question: refused, and told.
	env, _ := protocol.New(protocol.KindChat, protocol.Chat{Text: "Nowhere"})
	env.ID, env.To, env.CorrelationID = protocol.NewID(), []string{"helper"}, []string{q.ID}
	if err := other.Send(testCtx(t), env); err != nil {
		t.Fatal(err)
	}
	if got := chatText(othersSeen.wait(t, "the refusal", protocol.KindChat, fromHelper(env.ID))); !strings.Contains(got, "Only human may answer") {
		t.Errorf("refusal %q", got)
	}

	if _, err := human.Chat(testCtx(t), "Paris", "helper"); err != nil {
		t.Fatal(err)
	}
	if got := chatText(seen.wait(t, "the answer", protocol.KindChat, func(e *protocol.Envelope) bool {
		return e.From == "helper" && e.CorrelatesWith(id) && e.ID != q.ID
	})); got != "Booked Paris" {
		t.Errorf("answer %q", got)
	}
}

// A chat/cancel of the chat, or a reasoning/cancel of its reasoning,
// cancels the task at the agent; the reasoning ends cancelled, and no
// answer is sent. A task the agent cancels itself is told.
func TestCancelBothWays(t *testing.T) {
	g := startSpace(t)
	r := startRemote(t, true)
	human := joinAs(t, g, "human-token")
	seen := watch(human)
	startBridge(t, g, r.URL, a2abridge.Options{})

	for _, how := range []string{protocol.KindChatCancel, protocol.KindReasoningCancel} {
		id, _ := human.Chat(testCtx(t), "slow please", "helper")
		start := seen.wait(t, "the reasoning", protocol.KindReasoningStart, fromHelper(id))
		seen.wait(t, "the task working", protocol.KindReasoningThought, func(e *protocol.Envelope) bool { return e.Context == start.ID })
		switch how {
		case protocol.KindChatCancel:
			if err := human.CancelChat(testCtx(t), id, "changed my mind"); err != nil {
				t.Fatal(err)
			}
		default:
			env, _ := protocol.New(protocol.KindReasoningCancel, protocol.ReasoningCancel{Reason: "changed my mind"})
			env.To, env.Context = []string{"helper"}, start.ID
			if err := human.Send(testCtx(t), env); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case <-r.canceled:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the agent's task was not canceled", how)
		}
		end := seen.wait(t, "the conclusion", protocol.KindReasoningConclusion, func(e *protocol.Envelope) bool { return e.Context == start.ID })
		if !strings.Contains(string(end.Payload), `"cancelled":true`) || !strings.Contains(string(end.Payload), "changed my mind") {
			t.Errorf("%s: conclusion %s", how, end.Payload)
		}
	}

	id, _ := human.Chat(testCtx(t), "quit now", "helper")
	if got := chatText(seen.wait(t, "the news", protocol.KindChat, fromHelper(id))); got != "Helper canceled the task: I gave up" {
		t.Errorf("news %q", got)
	}
	id, _ = human.Chat(testCtx(t), "fail now", "helper")
	if got := chatText(seen.wait(t, "the failure", protocol.KindChat, fromHelper(id))); !strings.Contains(got, "could not answer (the task failed): no luck today") {
		t.Errorf("failure %q", got)
	}
}

// Each skill is a tool: a call names the skill, its artifacts are the
// result; a question is answered by calling again with the task id, which
// only the caller may do.
func TestSkillTools(t *testing.T) {
	g := startSpace(t)
	r := startRemote(t, true)
	human := joinAs(t, g, "human-token")
	other := joinAs(t, g, "other-token")
	b := startBridge(t, g, r.URL, a2abridge.Options{})

	var names []string
	for _, tool := range b.Participant().Tools() {
		names = append(names, tool.Name)
		if tool.Name == "echo" && !strings.Contains(tool.Description, `skill "echo" of the A2A agent Helper`) {
			t.Errorf("description %q", tool.Description)
		}
	}
	if !slices.Equal(names, []string{"echo", "book", "slow"}) {
		t.Fatalf("tools %v", names)
	}

	res, st := callTool(t, human, "echo", map[string]any{"message": "ping"})
	if res.IsError || res.Text() != "echo: ping" || st["state"] != "completed" || st["task_id"] == "" {
		t.Errorf("echo: %+v %v", res, st)
	}
	res, st = callTool(t, human, "book", map[string]any{"message": "a trip", "data": map[string]any{"nights": 2}})
	if res.IsError || st["state"] != "input-required" || st["question"] != "Which city?" || !strings.Contains(res.Text(), `call book again with task_id "`+st["task_id"]) {
		t.Fatalf("book: %+v %v", res, st)
	}
	task := st["task_id"]
	if res, _ := callTool(t, other, "book", map[string]any{"message": "Oslo", "task_id": task}); !res.IsError || !strings.Contains(res.Text(), "waits for your input") {
		t.Errorf("another caller continued the task: %+v", res)
	}
	res, st = callTool(t, human, "book", map[string]any{"message": "Rome", "task_id": task})
	if res.IsError || res.Text() != "Booked Rome" || st["task_id"] != task {
		t.Errorf("continued: %+v %v", res, st)
	}
	if got := r.skillIDs(); !slices.Equal(got, []string{"echo", "book", "book"}) {
		t.Errorf("skill ids the agent got: %v", got)
	}
	if res, _ := callTool(t, human, "echo", map[string]any{"message": ""}); !res.IsError {
		t.Errorf("an empty call: %+v", res)
	}
}

func TestToolName(t *testing.T) {
	for id, want := range map[string]string{"echo": "echo", "sample agent/v2": "sample_agent_v2", "": "skill", "é": "_",
		strings.Repeat("x", 80): strings.Repeat("x", 64)} {
		if got := a2abridge.ToolName(id); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", id, got, want)
		}
	}
}
