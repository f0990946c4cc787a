package hostile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// hostileModel is an OpenAI-compatible endpoint that answers a question
// naming an attack with that attack, and any other question with "fine:"
// and the question after delay.
//
//   - "flood": 100 MB in one answer (one JSON body, or one stream event);
//   - "endless": a stream that never ends;
//   - "drip": a stream of one byte every 3 s;
//   - "bigargs": a call of files_echo with 4 MB of arguments, then, once
//     the tool's answer is in the conversation, "fine: the tool said" and
//     its beginning.
func hostileModel(t *testing.T, delay time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		question, toolSaid := "", ""
		for _, m := range req.Messages {
			switch m.Role {
			case "user":
				question = string(m.Content)
			case "tool":
				toolSaid = string(m.Content)
			}
		}
		ctx := r.Context()
		switch {
		case strings.Contains(question, "flood"):
			flood(ctx, w, req.Stream, 100*mib)
		case strings.Contains(question, "endless"):
			endless(ctx, w, req.Stream)
		case strings.Contains(question, "drip"):
			drip(ctx, w, req.Stream, 3*time.Second)
		case strings.Contains(question, "bigargs") && toolSaid == "":
			bigArguments(w, req.Stream, 4*mib)
		case strings.Contains(question, "bigargs"):
			answer(w, req.Stream, "fine: the tool said "+toolSaid[:min(len(toolSaid), 300)])
		default:
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			var text string
			_ = json.Unmarshal(req.Messages[len(req.Messages)-1].Content, &text)
			answer(w, req.Stream, "fine: "+text)
		}
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

// completionHead and completionTail surround the content of a completion.
const (
	completionHead = `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`
	completionTail = `"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	chunkHead      = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"`
	chunkTail      = `"}}]}` + "\n\n"
	streamEnd      = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
)

// answer writes a well-behaved answer of text.
func answer(w http.ResponseWriter, stream bool, text string) {
	quoted, err := json.Marshal(text)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	inner := string(quoted[1 : len(quoted)-1]) // the heads and tails hold the quotes
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, chunkHead+inner+chunkTail+streamEnd)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, completionHead+inner+completionTail)
}

// bigArguments answers with a call of the tool files_echo (the bridged
// server's echo, as the agent names it) whose arguments are n bytes.
func bigArguments(w http.ResponseWriter, stream bool, n int) {
	args, err := json.Marshal(map[string]string{"text": strings.Repeat("a", n)})
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	call := map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "files_echo", "arguments": string(args)}}
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		call["index"] = 0
		chunk, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "tool_calls": []any{call}}, "finish_reason": "tool_calls"}}})
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", chunk)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call}}}},
		"usage":   map[string]int{"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})
}

// flood writes an answer of n bytes, a MiB at a time, until the reader
// goes away.
func flood(ctx context.Context, w http.ResponseWriter, stream bool, n int) {
	head, tail := completionHead, completionTail
	w.Header().Set("Content-Type", "application/json")
	if stream {
		head, tail = chunkHead, chunkTail
		w.Header().Set("Content-Type", "text/event-stream")
	}
	piece := strings.Repeat("f", mib)
	if _, err := fmt.Fprint(w, head); err != nil {
		return
	}
	for written := 0; written < n && ctx.Err() == nil; written += len(piece) {
		if _, err := fmt.Fprint(w, piece); err != nil {
			return
		}
	}
	fmt.Fprint(w, tail)
}

// endless sends small pieces, as a stream or as the content of one
// answer, until the reader goes away (or a minute has passed, so that the
// test's server always stops).
func endless(ctx context.Context, w http.ResponseWriter, stream bool) {
	piece := strings.Repeat("e", 64)
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		piece = chunkHead + piece + chunkTail
	} else {
		w.Header().Set("Content-Type", "application/json")
		if _, err := fmt.Fprint(w, completionHead); err != nil {
			return
		}
	}
	for end := time.Now().Add(time.Minute); ctx.Err() == nil && time.Now().Before(end); {
		if _, err := fmt.Fprint(w, piece); err != nil {
			return
		}
	}
}

// drip sends a well-formed answer one byte every d.
func drip(ctx context.Context, w http.ResponseWriter, stream bool, d time.Duration) {
	msg := completionHead + "slowly" + completionTail
	w.Header().Set("Content-Type", "application/json")
	if stream {
		msg = chunkHead + "slowly" + chunkTail + streamEnd
		w.Header().Set("Content-Type", "text/event-stream")
	}
	w.WriteHeader(http.StatusOK)
	tick := time.NewTicker(d)
	defer tick.Stop()
	for i := 0; i < len(msg); i++ {
		if _, err := w.Write([]byte{msg[i]}); err != nil {
			return
		}
		w.(http.Flusher).Flush()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// chats collects the agent's chats that answer a participant's questions.
type chats struct {
	mu  sync.Mutex
	got map[string]string // question id → answer text
}

// listen collects the agent's answers to p.
func listen(p *participant.Participant) *chats {
	c := &chats{got: map[string]string{}}
	p.Client().OnKind(protocol.KindChat, func(env *protocol.Envelope) {
		if env.From != "agent" || len(env.CorrelationID) == 0 {
			return
		}
		var ch protocol.Chat
		if env.DecodePayload(&ch) != nil {
			return
		}
		c.mu.Lock()
		c.got[env.CorrelationID[0]] = ch.Text
		c.mu.Unlock()
	})
	return c
}

// ask sends text to the agent as p and returns the chat's id.
func ask(t *testing.T, p *participant.Participant, text string) string {
	t.Helper()
	id, err := p.Chat(testutil.Context(t, 5*time.Second), text, "agent")
	if err != nil {
		t.Fatalf("chat %q: %v", text, err)
	}
	return id
}

// answerTo waits up to d for the agent's answer to question id.
func (c *chats) answerTo(t *testing.T, id string, d time.Duration) string {
	t.Helper()
	var text string
	testutil.WaitFor(t, d, "the agent's answer to "+id, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		var ok bool
		text, ok = c.got[id]
		return ok
	})
	return text
}

// startAgent runs `mew agent run` as agent against the model at base,
// with an answer bounded to answerTime, and waits until it answers.
func startAgent(t *testing.T, g *testutil.Gateway, base string, answerTime time.Duration, human *participant.Participant, heard *chats, env ...string) *child {
	t.Helper()
	a := startMew(t, append([]string{"MEW_LLM_MAX_ANSWER_TIME=" + answerTime.String(), "OPENAI_API_KEY="}, env...),
		"agent", "run", "-g", "ws://"+g.Addr, "-s", g.Config.Space.ID, "--id", "agent", "-t", "agent-token", "--base-url", base, "-m", "m")
	// Asked again every 2 s until the agent, once joined, answers.
	var id string
	asked := time.Time{}
	testutil.WaitFor(t, 30*time.Second, "the agent answers", func() bool {
		if a.exited() {
			t.Fatalf("the agent exited: %v\n%s", a.err, a.out)
		}
		if time.Since(asked) > 2*time.Second {
			id, asked = ask(t, human, "are you there?"), time.Now()
		}
		heard.mu.Lock()
		defer heard.mu.Unlock()
		_, ok := heard.got[id]
		return ok
	})
	return a
}

// TestHostileModel (class 7): a model endpoint answers with 100 MB, with
// a stream that never ends, and with one byte every 3 s. `mew agent run`
// (a child process) ends each answer with a chat that says what went
// wrong, soon; its resident set stays bounded (it once reached 939 MB);
// while the drip holds it, another asker's question waits and is
// answered once the answer's time is up; the bystanders' chats flow.
func TestHostileModel(t *testing.T) {
	g := startSpace(t)
	human, asker := join(t, g, "human"), join(t, g, "asker")
	heardHuman, heardAsker := listen(human), listen(asker)
	const answerTime = 4 * time.Second
	model := hostileModel(t, 0)
	a := startAgent(t, g, model.URL+"/v1", answerTime, human, heardHuman)
	t.Logf("the agent's peak resident set before the attacks: %.1f MiB", float64(procStatus(t, a.pid(), "VmHWM"))/mib)
	by := startBystander(t, g)
	for _, c := range []struct {
		attack, want string
		within       time.Duration
	}{
		{"flood", "too large", 10 * time.Second},
		{"endless", "too large", 10 * time.Second},
		{"drip", "timed out", answerTime + 5*time.Second},
	} {
		start := time.Now()
		q := ask(t, asker, "please "+c.attack)
		var other string
		if c.attack == "drip" {
			other = ask(t, human, "a question while the model is slow")
		}
		text := heardAsker.answerTo(t, q, c.within)
		took := time.Since(start)
		if !strings.Contains(text, "could not answer") || !strings.Contains(text, c.want) {
			t.Errorf("%s: the asker was told %q, want a clear error (%q)", c.attack, text, c.want)
		}
		t.Logf("%s: the asker was told after %v: %q", c.attack, took, text)
		if other != "" {
			got := heardHuman.answerTo(t, other, 10*time.Second)
			if !strings.HasPrefix(got, "fine:") {
				t.Errorf("the other question, asked during the drip, was answered %q", got)
			}
			t.Logf("the other question was answered %v after the drip began", time.Since(start))
		}
		if got := heardHuman.answerTo(t, ask(t, human, "a question after the attack"), 10*time.Second); !strings.HasPrefix(got, "fine:") {
			t.Errorf("after the %s, a normal question was answered %q", c.attack, got)
		}
	}
	by.check(t, time.Second)
	hwm := procStatus(t, a.pid(), "VmHWM")
	t.Logf("the agent's peak resident set through the attacks: %.1f MiB", float64(hwm)/mib)
	if limit := 192 * mib * raceScale(); hwm > limit {
		t.Errorf("the agent's peak resident set is %.1f MiB, over %d MiB", float64(hwm)/mib, limit/mib)
	}
}

// TestHostileAgentArguments (class 6, through an agent): a model tells
// `mew agent run` to call the bridged server's echo with 4 MB of
// arguments, more than the gateway relays (TestHostileToolArguments sends
// 20 MB as a participant; a model's 20 MB answer is over the llm package's
// default bound and refused before any call). The gateway refuses the
// request and names it, so the agent's call fails at once; the agent
// tells its model, which answers the asker; the bystanders' chats flow.
func TestHostileAgentArguments(t *testing.T) {
	g := startSpace(t)
	human, asker := join(t, g, "human"), join(t, g, "asker")
	heardHuman, heardAsker := listen(human), listen(asker)
	startBridgeMew(t, g, human, stdioServer(t)...)
	model := hostileModel(t, 0)
	a := startAgent(t, g, model.URL+"/v1", time.Minute, human, heardHuman)
	by := startBystander(t, g)
	start := time.Now()
	q := ask(t, asker, "please call echo with bigargs")
	text := heardAsker.answerTo(t, q, 3*soon())
	took := time.Since(start)
	if !strings.HasPrefix(text, "fine: the tool said") || !strings.Contains(text, "too_large") {
		t.Errorf("the asker was told %q, want the model's answer quoting the gateway's too_large", text)
	}
	if took > soon() {
		t.Errorf("the asker was answered after %v", took)
	}
	by.check(t, time.Second)
	hwm := procStatus(t, a.pid(), "VmHWM")
	t.Logf("4 MB of tool arguments from the agent: the asker answered in %v: %.160q; the agent's peak resident set %.1f MiB", took, text, float64(hwm)/mib)
	if limit := 192 * mib * raceScale(); hwm > limit {
		t.Errorf("the agent's peak resident set is %.1f MiB, over %d MiB", float64(hwm)/mib, limit/mib)
	}
}
