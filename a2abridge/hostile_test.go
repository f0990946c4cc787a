package a2abridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/a2abridge"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// hostile is an A2A agent that misbehaves as mode says, written by hand
// (no a2a.Server) so that it can break the protocol's promises.
type hostile struct {
	URL  string
	mode string

	mu       sync.Mutex
	canceled []string
	methods  []string
}

func startHostile(t *testing.T, mode string) *hostile {
	t.Helper()
	h := &hostile{mode: mode}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h.URL = "http://" + l.Addr().String()
	hs := &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	hs.Start()
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close() })
	return h
}

func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		card := a2a.AgentCard{Name: "Hostile", Description: "Misbehaves.", Version: "0",
			SupportedInterfaces: []a2a.AgentInterface{{URL: h.URL + "/", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}},
			Capabilities:        a2a.AgentCapabilities{Streaming: a2a.Bool(true)},
			Skills:              []a2a.AgentSkill{{ID: "do", Name: "Do", Description: "Does.", Tags: []string{"x"}}}}
		_ = json.NewEncoder(w).Encode(card)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ID string `json:"id"`
		} `json:"params"`
	}
	_ = json.NewDecoder(r.Body).Decode(&req)
	h.mu.Lock()
	h.methods = append(h.methods, req.Method)
	h.mu.Unlock()
	result := func(v any) []byte {
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": v})
		return b
	}
	task := func(state a2a.TaskState) a2a.Task {
		return a2a.Task{ID: "t1", ContextID: "c1", Status: a2a.TaskStatus{State: state}}
	}
	switch req.Method {
	case a2a.MethodCancelTask:
		h.mu.Lock()
		h.canceled = append(h.canceled, req.Params.ID)
		h.mu.Unlock()
		_, _ = w.Write(result(task(a2a.TaskStateCanceled)))
		return
	case a2a.MethodGetTask:
		_, _ = w.Write(result(task(a2a.TaskStateWorking)))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher := w.(http.Flusher)
	event := func(ev a2a.StreamResponse) bool {
		if _, err := fmt.Fprintf(w, "data: %s\n\n", result(ev)); err != nil {
			return false
		}
		flusher.Flush()
		return true
	}
	working := task(a2a.TaskStateWorking)
	event(a2a.StreamResponse{Task: &working})
	status := func(state a2a.TaskState, text string) a2a.StreamResponse {
		st := a2a.TaskStatus{State: state}
		if text != "" {
			st.Message = &a2a.Message{MessageID: "m", Role: a2a.RoleAgent, Parts: []a2a.Part{a2a.TextPart(text)}}
		}
		return a2a.StreamResponse{StatusUpdate: &a2a.TaskStatusUpdateEvent{TaskID: "t1", ContextID: "c1", Status: st}}
	}
	artifact := func(text string, appendIt bool) a2a.StreamResponse {
		return a2a.StreamResponse{ArtifactUpdate: &a2a.TaskArtifactUpdateEvent{TaskID: "t1", ContextID: "c1", Append: appendIt,
			Artifact: a2a.Artifact{ArtifactID: "a1", Parts: []a2a.Part{a2a.TextPart(text)}}}}
	}
	switch {
	case h.mode == "forever":
		for i := 0; r.Context().Err() == nil; i++ {
			if !event(status(a2a.TaskStateWorking, fmt.Sprintf("still going %d", i))) {
				return
			}
			time.Sleep(time.Millisecond)
		}
	case h.mode == "drop-once" && req.Method == a2a.MethodSubscribeToTask:
		event(artifact("came back", false))
		event(status(a2a.TaskStateCompleted, ""))
	case h.mode == "drop-once", h.mode == "drop-always":
		event(status(a2a.TaskStateWorking, "working on it")) // and the stream ends, the task unfinished
	case h.mode == "big":
		event(artifact(strings.Repeat("x", 2<<20), false))
		event(status(a2a.TaskStateCompleted, ""))
	case h.mode == "chunks":
		for i := range 200 {
			event(artifact(strings.Repeat(string(rune('a'+i%26)), 1024), i > 0))
		}
		event(status(a2a.TaskStateCompleted, ""))
	}
}

func (h *hostile) calls() (methods, canceled []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.methods...), append([]string(nil), h.canceled...)
}

// callHostile bridges the hostile agent of mode, with opts, into a space
// of its own and calls its skill as human.
func callHostile(t *testing.T, mode string, opts a2abridge.Options) (human *participant.Participant, h *hostile, res *participant.ToolResult, st map[string]string) {
	t.Helper()
	g, human := spaceWithHuman(t)
	h = startHostile(t, mode)
	startBridge(t, g, h.URL, opts)
	res, st = callTool(t, human, "do", map[string]any{"message": "go"})
	return human, h, res, st
}

// Agents that stream forever, drop their streams or send too much are
// cut, told and canceled; the bridge stays up and nothing leaks.
func TestHostileAgents(t *testing.T) {
	t.Run("streams forever", func(t *testing.T) {
		human, h, res, _ := callHostile(t, "forever", a2abridge.Options{MaxEvents: 50, MaxThoughts: 3})
		seen := watch(human)
		if !res.IsError || !strings.Contains(res.Text(), "more events than the bridge takes: more than 50 events") {
			t.Errorf("tool: %+v", res)
		}
		id, _ := human.Chat(testCtx(t), "go on", "helper")
		got := chatText(seen.wait(t, "the chat's end", protocol.KindChat, fromHelper(id)))
		if !strings.Contains(got, "Hostile could not answer") || !strings.Contains(got, "more than 50 events") || !strings.Contains(got, "The task was canceled.") {
			t.Errorf("chat: %q", got)
		}
		if _, canceled := h.calls(); len(canceled) != 2 {
			t.Errorf("canceled %v, want the tool's and the chat's task", canceled)
		}
	})

	t.Run("drops the stream once", func(t *testing.T) {
		_, h, res, st := callHostile(t, "drop-once", a2abridge.Options{})
		if res.IsError || res.Text() != "came back" || st["state"] != "completed" {
			t.Errorf("tool: %+v", res)
		}
		if methods, _ := h.calls(); strings.Join(methods, ",") != "SendStreamingMessage,SubscribeToTask" {
			t.Errorf("methods %v", methods)
		}
	})

	t.Run("drops the stream always", func(t *testing.T) {
		_, h, res, _ := callHostile(t, "drop-always", a2abridge.Options{})
		if !res.IsError || !strings.Contains(res.Text(), "stream broke and did not come back (task t1 was working when last seen)") {
			t.Errorf("tool: %+v", res)
		}
		methods, canceled := h.calls()
		if strings.Join(methods, ",") != "SendStreamingMessage,SubscribeToTask,GetTask,CancelTask" || len(canceled) != 1 {
			t.Errorf("methods %v, canceled %v", methods, canceled)
		}
	})

	t.Run("oversized event", func(t *testing.T) {
		_, _, res, _ := callHostile(t, "big", a2abridge.Options{})
		if !res.IsError || !strings.Contains(res.Text(), "longer than 1048576 bytes") {
			t.Errorf("tool: %+v", res)
		}
	})

	t.Run("oversized answer", func(t *testing.T) {
		human, _, res, _ := callHostile(t, "chunks", a2abridge.Options{MaxAnswerBytes: 4096})
		seen := watch(human)
		if res.IsError || len(res.Text()) > 4096+100 || !strings.HasSuffix(res.Text(), "[cut: the agent's answer is longer than the bridge takes]") {
			t.Errorf("tool: %d bytes, %q…", len(res.Text()), res.Text()[:min(len(res.Text()), 80)])
		}
		id, _ := human.Chat(testCtx(t), "go", "helper")
		got := chatText(seen.wait(t, "the answer", protocol.KindChat, fromHelper(id)))
		if len(got) > 4096+100 || !strings.HasPrefix(got, strings.Repeat("a", 1024)+strings.Repeat("b", 1024)) || !strings.Contains(got, "[cut:") {
			t.Errorf("chat: %d bytes", len(got))
		}
	})
}

// A refused or unreachable card is Run's error, and a card asking for a
// credential the bridge lacks names what it asks.
func TestStartErrors(t *testing.T) {
	g := startSpace(t)
	card := &a2a.AgentCard{Name: "Locked", Description: "d", Version: "1",
		SecuritySchemes:      map[string]a2a.SecurityScheme{"key": {APIKey: &a2a.APIKeySecurityScheme{Location: "header", Name: "X-Key"}}},
		SecurityRequirements: []a2a.SecurityRequirement{{Schemes: map[string]a2a.StringList{"key": {}}}},
		Skills:               []a2a.AgentSkill{{ID: "s", Name: "s", Description: "s", Tags: []string{"t"}}}}
	url := serve(t, a2a.Options{Card: card, Executor: a2a.ExecutorFunc(func(context.Context, *a2a.Run) error { return nil })})
	for _, tc := range []struct {
		url, want string
	}{
		{url, "asks for key (an API key in header X-Key)"},
		{"http://127.0.0.1:1", "reading the agent card"},
	} {
		b, err := a2abridge.New(a2abridge.Options{URL: tc.url, Participant: participantOpts(g)})
		if err != nil {
			t.Fatal(err)
		}
		err = b.Run(testCtx(t))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v", tc.url, err)
		}
	}
	for _, o := range []a2abridge.Options{
		{URL: "ftp://x/"},
		{URL: "http://user:pw@x/"},
		{URL: "http://x/", Auth: a2abridge.Auth{Bearer: "a\nb"}},
		{URL: "http://x/", Auth: a2abridge.Auth{ClientID: "id"}},
		{URL: "http://x/", MaxTasks: -1},
	} {
		if _, err := a2abridge.New(o); err == nil || strings.Contains(err.Error(), "pw") {
			t.Errorf("%+v: %v", o, err)
		}
	}
}
