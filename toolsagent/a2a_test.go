package toolsagent_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/toolsagent"
)

// serveA2A serves a over A2A on a test server until the test ends.
func serveA2A(t *testing.T, a *toolsagent.Agent) (*a2a.Client, *httptest.Server) {
	t.Helper()
	hs := httptest.NewUnstartedServer(nil)
	srv, err := a.NewA2AServer(toolsagent.A2AOptions{URL: "http://" + hs.Listener.Addr().String() + "/"})
	if err != nil {
		t.Fatal(err)
	}
	hs.Config.Handler = srv
	hs.Start()
	t.Cleanup(func() {
		hs.CloseClientConnections()
		_ = srv.Close()
		hs.Close()
	})
	return a2a.NewClient(hs.URL+"/", a2a.ClientOptions{}), hs
}

func a2aMessage(text string, meta string, data any) *a2a.Message {
	m := &a2a.Message{MessageID: protocol.NewID(), Role: a2a.RoleUser}
	if text != "" {
		m.Parts = append(m.Parts, a2a.TextPart(text))
	}
	if data != nil {
		p, _ := a2a.DataPart(data)
		m.Parts = append(m.Parts, p)
	}
	if meta != "" {
		m.Metadata = json.RawMessage(meta)
	}
	return m
}

// The tools are the card's skills; a task runs its skill's template as a
// call does, asks for missing arguments (input-required) and rejects an
// unknown skill.
func TestA2ASkills(t *testing.T) {
	tr := loadTravel(t, `
  - name: haiku
    description: Writes a haiku.
    tags: [poetry]
    examples: ["a haiku about rain"]
    outputModes: [text/plain]
    parameters: {type: object, properties: {topic: {type: string}}, required: [topic]}
    prompt: "Write a haiku about {topic}."
`)
	srv := testutil.NewLLMServer(t)
	srv.Script(testutil.LLMReply("Rain on the tin roof"), testutil.LLMReply("No flights on that day."))
	a := newAgent(t, tr.def, srv)
	c, hs := serveA2A(t, a)
	ctx := ctxFor(t, 30*time.Second)

	card, err := a2a.FetchCard(ctx, hs.URL, a2a.ClientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range card.Skills {
		ids = append(ids, s.ID)
	}
	if card.Name != "travel-desk" || card.Version != "2.1.0" || !slices.Equal(ids, []string{"find_flights", "echo", "haiku"}) {
		t.Fatalf("card %s %s %v", card.Name, card.Version, ids)
	}
	haiku, _ := card.Skill("haiku")
	if !slices.Equal(haiku.Tags, []string{"poetry"}) || !slices.Equal(haiku.Examples, []string{"a haiku about rain"}) || !slices.Equal(haiku.OutputModes, []string{"text/plain"}) {
		t.Errorf("haiku skill %+v", haiku)
	}
	if i, ok := card.Interface(); !ok || i.URL != hs.URL+"/" {
		t.Errorf("interfaces %+v", card.SupportedInterfaces)
	}

	// Text fills the skill's required string parameter.
	res, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: a2aMessage("rain", `{"skillId":"haiku"}`, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status.State != a2a.TaskStateCompleted || len(res.Task.Artifacts) != 1 || res.Task.Artifacts[0].Text() != "Rain on the tin roof" {
		t.Fatalf("haiku task %+v", res.Task)
	}
	if got := userMessage(srv.Requests()[0]); got != "Write a haiku about rain." {
		t.Errorf("prompt %q", got)
	}

	// Missing arguments: input-required, then the answer completes them.
	res, err = c.SendMessage(ctx, a2a.SendMessageRequest{Message: a2aMessage("", `{"skillId":"find_flights"}`,
		map[string]any{"origin": "Oslo", "destination": "Rome"})})
	if err != nil {
		t.Fatal(err)
	}
	task := res.Task
	if task.Status.State != a2a.TaskStateInputRequired || !strings.Contains(task.Status.Message.Text(), "date: required") {
		t.Fatalf("find_flights without a date: %s %+v", task.Status.State, task.Status.Message)
	}
	m := a2aMessage("2026-09-01", "", nil)
	m.TaskID = task.ID
	res, err = c.SendMessage(ctx, a2a.SendMessageRequest{Message: m})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status.State != a2a.TaskStateCompleted || res.Task.Artifacts[0].Text() != "No flights on that day." {
		t.Fatalf("continued task %+v", res.Task)
	}
	if got := userMessage(srv.Requests()[1]); got != "Find flights from Oslo to Rome on 2026-09-01 for 1." {
		t.Errorf("prompt %q", got)
	}

	// No skill named among several, or an unknown one: rejected.
	for _, meta := range []string{"", `{"skillId":"launch_rockets"}`} {
		res, err = c.SendMessage(ctx, a2a.SendMessageRequest{Message: a2aMessage("go", meta, nil)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Task.Status.State != a2a.TaskStateRejected || !strings.Contains(res.Task.Status.Message.Text(), "find_flights, echo, haiku") {
			t.Errorf("%q: %s %+v", meta, res.Task.Status.State, res.Task.Status.Message)
		}
	}
	if n := len(srv.Requests()); n != 2 {
		t.Errorf("the model was asked %d times, want 2", n)
	}
}

// An agent in a space runs an A2A task there in the open: reasoning
// envelopes, and its MCP calls to other participants under its own
// capabilities.
func TestA2AMirroredInSpace(t *testing.T) {
	g, human, seen, srv := calcSpace(t,
		testutil.LLMCall(testutil.LLMToolCall{Name: "calc_add", Arguments: `{"a":2,"b":40}`}),
		testutil.LLMReply("42"),
	)
	a := startDesk(t, g, srv)
	waitDesk(t, human)
	c, _ := serveA2A(t, a)
	ctx := ctxFor(t, 30*time.Second)

	res, err := c.SendMessage(ctx, a2a.SendMessageRequest{Message: a2aMessage("", "", map[string]any{"a": 2, "b": 40})})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task.Status.State != a2a.TaskStateCompleted || res.Task.Artifacts[0].Text() != "42" {
		t.Fatalf("task %+v", res.Task)
	}
	var start *protocol.Envelope
	waitFor(t, "the reasoning ends", func() bool {
		start = seen.find(func(e *protocol.Envelope) bool {
			return e.Kind == protocol.KindReasoningStart && e.From == "desk" && strings.Contains(string(e.Payload), res.Task.ID)
		})
		return start != nil && seen.find(func(e *protocol.Envelope) bool {
			return e.Kind == protocol.KindReasoningConclusion && e.Context == start.ID && strings.Contains(string(e.Payload), "Answer: 42")
		}) != nil
	})
	if !containsAll(string(start.Payload), "A2A caller anonymous", "What is 2 plus 40?") {
		t.Errorf("reasoning/start %s", start.Payload)
	}
	call := seen.find(func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindMCPRequest && e.From == "desk" && slices.Contains(e.To, "calc") && strings.Contains(string(e.Payload), `"name":"add"`)
	})
	if call == nil {
		t.Error("the agent's call of calc's add is not in the space")
	}
}
