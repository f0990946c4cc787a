package participant_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// addSchema is the input schema of the test calculator's add tool.
const addSchema = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

// mcpAddTool returns an add tool that counts its executions in calls.
func mcpAddTool(calls *atomic.Int32) participant.Tool {
	return participant.Tool{
		Name:        "add",
		Description: "Add two numbers",
		InputSchema: json.RawMessage(addSchema),
		Execute: func(ctx context.Context, args json.RawMessage) (any, error) {
			if calls != nil {
				calls.Add(1)
			}
			var in struct{ A, B float64 }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return in.A + in.B, nil
		},
	}
}

// waitTool is a tool "wait" that signals started and then runs until its
// context ends.
func waitTool(started chan<- struct{}) participant.Tool {
	return participant.Tool{Name: "wait", Execute: func(ctx context.Context, _ json.RawMessage) (any, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
}

// mcpJoin is join, then waits until the participant's capabilities from the
// welcome are in place (the welcome handlers may run after Connect returns).
func mcpJoin(t *testing.T, g *testutil.Gateway, id string, opts participant.Options) *participant.Participant {
	t.Helper()
	p := join(t, g, id, opts)
	testutil.WaitFor(t, 5*time.Second, id+" has the capabilities of its welcome", func() bool { return len(p.Capabilities()) > 0 })
	return p
}

// mcpCalc joins calc serving add (mcpAddTool) and returns it with the
// count of the tool's runs.
func mcpCalc(t *testing.T, g *testutil.Gateway) (*participant.Participant, *atomic.Int32) {
	t.Helper()
	calc := mcpJoin(t, g, "calc", participant.Options{})
	calls := new(atomic.Int32)
	if err := calc.RegisterTool(mcpAddTool(calls)); err != nil {
		t.Fatal(err)
	}
	return calc, calls
}

// mcpCall is a tools/call payload.
func mcpCall(name string, args any) map[string]any {
	return map[string]any{"method": "tools/call", "params": map[string]any{"name": name, "arguments": args}}
}

// mcpWatch collects the envelopes of one kind that p receives.
func mcpWatch(p *participant.Participant, kind string) <-chan *protocol.Envelope {
	ch := make(chan *protocol.Envelope, 256)
	p.Client().OnKind(kind, func(env *protocol.Envelope) {
		select {
		case ch <- env:
		default:
		}
	})
	return ch
}

// mcpWait returns the first envelope from ch that ok accepts.
func mcpWait(t *testing.T, ch <-chan *protocol.Envelope, what string, ok func(*protocol.Envelope) bool) *protocol.Envelope {
	t.Helper()
	return testutil.ReceiveWhere(t, ch, 5*time.Second, what, ok)
}

// callCalc calls calc's tool name as p and decodes the result, which it
// returns with the raw answer.
func callCalc(ctx context.Context, t *testing.T, p *participant.Participant, name string, args any) (*participant.ToolResult, json.RawMessage) {
	t.Helper()
	raw, err := p.Request(ctx, "calc", mcpCall(name, args))
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	return mcpResult(t, raw), raw
}

// mcpResult decodes a tool result.
func mcpResult(t *testing.T, raw json.RawMessage) *participant.ToolResult {
	t.Helper()
	var r participant.ToolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("tool result %s: %v", raw, err)
	}
	return &r
}

// mcpCtx is a context for one step of a test.
func mcpCtx(t *testing.T) context.Context { return testutil.Context(t, 10*time.Second) }

func TestToolCallRoundTrip(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	mcpCalc(t, g)
	human := mcpJoin(t, g, "human", participant.Options{})
	responses := mcpWatch(human, protocol.KindMCPResponse)
	ctx := mcpCtx(t)

	raw, err := human.Request(ctx, "calc", mcpCall("add", map[string]any{"a": 5, "b": 3}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(raw), `{"content":[{"type":"text","text":"8"}]}`; got != want {
		t.Fatalf("result = %s, want %s", got, want)
	}
	env := mcpWait(t, responses, "the response", nil)
	if env.From != "calc" || len(env.To) != 1 || env.To[0] != "human" || len(env.CorrelationID) != 1 {
		t.Fatalf("response envelope from %s to %v correlation %v", env.From, env.To, env.CorrelationID)
	}
	var payload struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(env.Payload, &payload); err != nil || payload.JSONRPC != "2.0" || len(payload.ID) == 0 || payload.ID[0] < '0' || payload.ID[0] > '9' {
		t.Fatalf("response payload %s: want jsonrpc 2.0 and the request's numeric id", env.Payload)
	}
}

func TestToolResultShapes(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	calc := mcpJoin(t, g, "calc", participant.Options{})
	human := mcpJoin(t, g, "human", participant.Options{})
	tools := map[string]any{
		"text":   "hello <world>",
		"object": map[string]any{"sum": 8},
		"nil":    nil,
		"result": &participant.ToolResult{Content: []participant.Content{{Type: "image", Data: "AAAA", MimeType: "image/png"}}},
	}
	for name, v := range tools {
		if err := calc.RegisterTool(participant.Tool{Name: name, Execute: func(context.Context, json.RawMessage) (any, error) { return v, nil }}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{
		"text":   `{"content":[{"type":"text","text":"hello <world>"}]}`,
		"object": `{"content":[{"type":"text","text":"{\"sum\":8}"}],"structuredContent":{"sum":8}}`,
		"nil":    `{"content":[]}`,
		"result": `{"content":[{"type":"image","data":"AAAA","mimeType":"image/png"}]}`,
	}
	ctx := mcpCtx(t)
	for name, w := range want {
		raw, err := human.Request(ctx, "calc", mcpCall(name, nil))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(raw) != w {
			t.Errorf("%s: result = %s, want %s", name, raw, w)
		}
	}
}

func TestToolArgumentsFailSchema(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	_, calls := mcpCalc(t, g)
	human := mcpJoin(t, g, "human", participant.Options{})
	ctx := mcpCtx(t)
	for _, args := range []any{map[string]any{"a": "five", "b": 3}, map[string]any{"a": 1}, "not an object", nil} {
		_, err := human.Request(ctx, "calc", mcpCall("add", args))
		var rpcErr *participant.RPCError
		if !errors.As(err, &rpcErr) || rpcErr.Code != participant.CodeInvalidParams || !strings.HasPrefix(rpcErr.Message, "Invalid arguments for tool add: ") {
			t.Fatalf("args %v: err = %v, want -32602 Invalid arguments", args, err)
		}
		t.Logf("args %v: %v", args, err)
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("Execute ran %d times for invalid arguments", n)
	}
	_, err := human.Request(ctx, "calc", mcpCall("nope", map[string]any{}))
	var rpcErr *participant.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != participant.CodeInvalidParams || rpcErr.Message != "Tool not found: nope" {
		t.Fatalf("unknown tool: err = %v", err)
	}
}

func TestToolErrorAndPanic(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	calc := mcpJoin(t, g, "calc", participant.Options{})
	for _, tool := range []participant.Tool{
		{Name: "fail", Execute: func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("division by zero") }},
		{Name: "boom", Execute: func(context.Context, json.RawMessage) (any, error) { panic("kaboom") }},
		mcpAddTool(nil),
	} {
		if err := calc.RegisterTool(tool); err != nil {
			t.Fatal(err)
		}
	}
	human := mcpJoin(t, g, "human", participant.Options{})
	ctx := mcpCtx(t)

	if r, raw := callCalc(ctx, t, human, "fail", nil); !r.IsError || r.Text() != "division by zero" {
		t.Fatalf("tool error: result %s", raw)
	}
	for range 2 {
		if r, raw := callCalc(ctx, t, human, "boom", nil); !r.IsError || !strings.Contains(r.Text(), "boom") {
			t.Fatalf("panicking tool: result %s", raw)
		}
	}
	if r, raw := callCalc(ctx, t, human, "add", map[string]any{"a": 1, "b": 2}); r.IsError || r.Text() != "3" {
		t.Fatalf("after a panic: result %s", raw)
	}
}

func TestToolsListAndMethods(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	calc, _ := mcpCalc(t, g)
	if err := calc.RegisterTool(participant.Tool{Name: "noop", Execute: func(context.Context, json.RawMessage) (any, error) { return nil, nil }}); err != nil {
		t.Fatal(err)
	}
	human := mcpJoin(t, g, "human", participant.Options{})
	ctx := mcpCtx(t)

	raw, err := human.Request(ctx, "calc", map[string]any{"method": "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tools":[{"name":"add","description":"Add two numbers","inputSchema":` + addSchema + `},{"name":"noop","inputSchema":{"type":"object"}}]}`
	if string(raw) != want {
		t.Fatalf("tools/list = %s\nwant %s", raw, want)
	}
	if got := calc.Tools(); len(got) != 2 || got[0].Name != "add" || got[1].Name != "noop" {
		t.Fatalf("Tools() = %+v", got)
	}
	if !calc.UnregisterTool("noop") || calc.UnregisterTool("noop") {
		t.Fatal("UnregisterTool")
	}

	raw, err = human.Request(ctx, "calc", map[string]any{"method": "initialize", "params": map[string]any{"protocolVersion": "2025-03-26"}})
	if err != nil {
		t.Fatal(err)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct{ Name string }
	}
	if err := json.Unmarshal(raw, &init); err != nil || init.ProtocolVersion != "2025-03-26" || init.ServerInfo.Name != "calc" {
		t.Fatalf("initialize = %s", raw)
	}
	if raw, err = human.Request(ctx, "calc", map[string]any{"method": "ping"}); err != nil || string(raw) != "{}" {
		t.Fatalf("ping = %s, %v", raw, err)
	}
	_, err = human.Request(ctx, "calc", map[string]any{"method": "sampling/createMessage"})
	var rpcErr *participant.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != participant.CodeMethodNotFound {
		t.Fatalf("unknown method: err = %v", err)
	}

	// With an OnRequest handler, the participant leaves such methods to it.
	remove := calc.OnRequest(func(r *participant.Request) {
		if r.Method == "custom/echo" {
			go func() { _ = r.Respond(context.Background(), map[string]any{"echo": r.Params}) }()
		} else {
			go func() { _ = r.RespondError(context.Background(), -32000, "no "+r.Method) }()
		}
	})
	raw, err = human.Request(ctx, "calc", map[string]any{"method": "custom/echo", "params": map[string]any{"x": 1}})
	if err != nil || string(raw) != `{"echo":{"x":1}}` {
		t.Fatalf("custom method = %s, %v", raw, err)
	}
	_, err = human.Request(ctx, "calc", map[string]any{"method": "custom/other"})
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32000 || rpcErr.Message != "no custom/other" {
		t.Fatalf("custom error = %v", err)
	}
	// Once the handler is removed, the method is unknown again.
	remove()
	_, err = human.Request(ctx, "calc", map[string]any{"method": "custom/echo"})
	if !errors.As(err, &rpcErr) || rpcErr.Code != participant.CodeMethodNotFound {
		t.Fatalf("custom method after the handler's removal: err = %v", err)
	}
}

func TestRegisterToolErrors(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	calc := mcpJoin(t, g, "calc", participant.Options{})
	exec := func(context.Context, json.RawMessage) (any, error) { return nil, nil }
	if err := calc.RegisterTool(participant.Tool{Name: "x", Execute: exec}); err != nil {
		t.Fatal(err)
	}
	for name, tool := range map[string]participant.Tool{
		"no name":        {Execute: exec},
		"no execute":     {Name: "y"},
		"duplicate":      {Name: "x", Execute: exec},
		"bad type":       {Name: "y", Execute: exec, InputSchema: json.RawMessage(`{"type":"nope"}`)},
		"not an object":  {Name: "y", Execute: exec, InputSchema: json.RawMessage(`true`)},
		"not JSON":       {Name: "y", Execute: exec, InputSchema: json.RawMessage(`{"type":`)},
		"external $ref":  {Name: "y", Execute: exec, InputSchema: json.RawMessage(`{"$ref":"file:///etc/passwd"}`)},
		"bad regexp":     {Name: "y", Execute: exec, InputSchema: json.RawMessage(`{"type":"string","pattern":"("}`)},
		"bad properties": {Name: "y", Execute: exec, InputSchema: json.RawMessage(`{"properties":[]}`)},
	} {
		if err := calc.RegisterTool(tool); err == nil {
			t.Errorf("%s: RegisterTool succeeded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
	if err := calc.RegisterTool(participant.Tool{Name: "x", Execute: exec}); !errors.Is(err, participant.ErrAlreadyRegistered) {
		t.Fatalf("duplicate: %v", err)
	}
	if err := calc.RegisterResource(participant.Resource{URI: "mem://a"}); err == nil {
		t.Fatal("resource without Read registered")
	}
}

func TestResources(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	calc := mcpJoin(t, g, "calc", participant.Options{})
	for _, r := range []participant.Resource{
		{URI: "mem://notes.txt", Name: "notes", Description: "Notes", MimeType: "text/plain",
			Read: func(context.Context) ([]byte, error) { return []byte("remember the milk"), nil }},
		{URI: "mem://logo.png", MimeType: "image/png",
			Read: func(context.Context) ([]byte, error) { return []byte{0x89, 'P', 'N', 'G'}, nil }},
		{URI: "mem://broken", Read: func(context.Context) ([]byte, error) { return nil, errors.New("disk on fire") }},
	} {
		if err := calc.RegisterResource(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := calc.RegisterResource(participant.Resource{URI: "mem://broken", Read: func(context.Context) ([]byte, error) { return nil, nil }}); !errors.Is(err, participant.ErrAlreadyRegistered) {
		t.Fatalf("duplicate resource: %v", err)
	}
	human := mcpJoin(t, g, "human", participant.Options{})
	ctx := mcpCtx(t)

	raw, err := human.Request(ctx, "calc", map[string]any{"method": "resources/list"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"resources":[{"uri":"mem://notes.txt","name":"notes","description":"Notes","mimeType":"text/plain"},{"uri":"mem://logo.png","name":"mem://logo.png","mimeType":"image/png"},{"uri":"mem://broken","name":"mem://broken"}]}`
	if string(raw) != want {
		t.Fatalf("resources/list = %s\nwant %s", raw, want)
	}
	read := func(uri string) (json.RawMessage, error) {
		return human.Request(ctx, "calc", map[string]any{"method": "resources/read", "params": map[string]any{"uri": uri}})
	}
	if raw, err = read("mem://notes.txt"); err != nil || string(raw) != `{"contents":[{"uri":"mem://notes.txt","mimeType":"text/plain","text":"remember the milk"}]}` {
		t.Fatalf("read text = %s, %v", raw, err)
	}
	if raw, err = read("mem://logo.png"); err != nil || string(raw) != `{"contents":[{"uri":"mem://logo.png","mimeType":"image/png","blob":"iVBORw=="}]}` {
		t.Fatalf("read blob = %s, %v", raw, err)
	}
	var rpcErr *participant.RPCError
	if _, err = read("mem://nothing"); !errors.As(err, &rpcErr) || rpcErr.Code != participant.CodeResourceNotFound {
		t.Fatalf("read unknown: %v", err)
	}
	if _, err = read("mem://broken"); !errors.As(err, &rpcErr) || rpcErr.Code != participant.CodeInternalError || !strings.Contains(rpcErr.Message, "disk on fire") {
		t.Fatalf("read failing: %v", err)
	}
	if got := calc.Resources(); len(got) != 3 || !calc.UnregisterResource("mem://broken") || len(calc.Resources()) != 2 {
		t.Fatalf("Resources() = %+v", got)
	}
}

func TestRequestsNotAddressedAreIgnored(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	_, calls := mcpCalc(t, g)
	mcpJoin(t, g, "agent", participant.Options{})
	human := mcpJoin(t, g, "human", participant.Options{})
	responses := mcpWatch(human, protocol.KindMCPResponse)
	ctx := mcpCtx(t)

	send := func(to []string) string {
		env, err := protocol.New(protocol.KindMCPRequest, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": "add", "arguments": map[string]any{"a": 1, "b": 1}}})
		if err != nil {
			t.Fatal(err)
		}
		env.To = to
		if err := human.Send(ctx, env); err != nil {
			t.Fatal(err)
		}
		return env.ID
	}
	send(nil)               // broadcast
	send([]string{"agent"}) // someone else's
	direct := send([]string{"calc"})
	env := mcpWait(t, responses, "calc's response", func(e *protocol.Envelope) bool { return e.From == "calc" })
	if !env.CorrelatesWith(direct) {
		t.Fatalf("calc answered %v, not the request addressed to it", env.CorrelationID)
	}
	timeout := time.After(200 * time.Millisecond)
	for {
		select {
		case env := <-responses:
			if env.From == "calc" {
				t.Fatalf("unexpected response from calc correlated to %v", env.CorrelationID)
			}
			continue // agent answers the request addressed to it
		case <-timeout:
		}
		break
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("add ran %d times, want 1", n)
	}
}

func TestDelegatedMethodsGoToOnRequest(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	// calc registers a tool but delegates tools/call and tools/list (as a
	// bridge does); initialize, ping and the rest it still answers itself.
	calc := mcpJoin(t, g, "calc", participant.Options{DelegatedMethods: []string{"tools/call", "tools/list", "ping"}})
	if err := calc.RegisterTool(mcpAddTool(nil)); err != nil {
		t.Fatal(err)
	}
	human := mcpJoin(t, g, "human", participant.Options{})
	ctx := mcpCtx(t)

	// Without a handler, a delegated method is not found.
	_, err := human.Request(ctx, "calc", mcpCall("add", map[string]any{"a": 1, "b": 2}))
	var rpcErr *participant.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != participant.CodeMethodNotFound {
		t.Fatalf("delegated method without a handler: %v", err)
	}

	var seen atomic.Int32
	calc.OnRequest(func(r *participant.Request) {
		seen.Add(1)
		switch r.Method {
		case "tools/list":
			go func() { _ = r.Respond(context.Background(), map[string]any{"tools": []any{}, "nextCursor": "2"}) }()
		case "tools/call":
			go func() {
				_ = r.RespondRPCError(context.Background(), &participant.RPCError{Code: -32042, Message: "elsewhere", Data: json.RawMessage(`{"why":"delegated"}`)})
			}()
		}
	})
	raw, err := human.Request(ctx, "calc", map[string]any{"method": "tools/list"})
	if err != nil || string(raw) != `{"nextCursor":"2","tools":[]}` {
		t.Fatalf("delegated tools/list = %s, %v", raw, err)
	}
	_, err = human.Request(ctx, "calc", mcpCall("add", map[string]any{"a": 1, "b": 2}))
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32042 || rpcErr.Message != "elsewhere" || string(rpcErr.Data) != `{"why":"delegated"}` {
		t.Fatalf("delegated tools/call error = %v (%+v)", err, rpcErr)
	}
	if raw, err = human.Request(ctx, "calc", map[string]any{"method": "ping"}); err != nil || string(raw) != "{}" {
		t.Fatalf("ping = %s, %v (ping is never delegated)", raw, err)
	}
	if _, err = human.Request(ctx, "calc", map[string]any{"method": "resources/list"}); err != nil {
		t.Fatalf("resources/list (not delegated): %v", err)
	}
	if n := seen.Load(); n != 2 {
		t.Errorf("the handler saw %d requests, want 2", n)
	}
}
