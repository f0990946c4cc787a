package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mew-protocol/mew/llm"
)

func schema(s string) json.RawMessage { return json.RawMessage(s) }

const twoNumbers = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

// offlineTools are tools as an agent would offer them, names mapped from
// participant/tool in two ways.
var offlineTools = []llm.Tool{
	{Name: "calculator_add", Description: "Add two numbers", Parameters: schema(twoNumbers)},
	{Name: "calculator_subtract", Description: "Subtract b from a", Parameters: schema(twoNumbers)},
	{Name: "calculator_multiply", Description: "Multiply two numbers", Parameters: schema(twoNumbers)},
	{Name: "calculator_divide", Description: "Divide a by b", Parameters: schema(twoNumbers)},
	{Name: "fs/read_file", Description: "Read the complete contents of a file from the file system.",
		Parameters: schema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{Name: "echo", Description: "Echoes back the input text",
		Parameters: schema(`{"type":"object","properties":{"text":{"type":"string","description":"Text to echo"}},"required":["text"]}`)},
	{Name: "weather-service/getWeather", Description: "Current weather for a city",
		Parameters: schema(`{"type":"object","properties":{"city":{"type":"string"},"units":{"type":"string","enum":["metric","imperial"]}},"required":["city"]}`)},
}

func complete(t *testing.T, req llm.Request) *llm.Response {
	t.Helper()
	resp, err := llm.NewOffline().Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestOfflineCallsTools(t *testing.T) {
	for _, tc := range []struct {
		request, tool, args string
	}{
		{"add 2 and 3", "calculator_add", `{"a":2,"b":3}`},
		{"What is 2 plus 3?", "calculator_add", `{"a":2,"b":3}`},
		{"what's 2+3", "calculator_add", `{"a":2,"b":3}`},
		{"Please add two and three.", "calculator_add", `{"a":2,"b":3}`},
		{"sum of 1.5 and -4", "calculator_add", `{"a":1.5,"b":-4}`},
		{"multiply 7 by 6", "calculator_multiply", `{"a":7,"b":6}`},
		{"what is 7 times 6", "calculator_multiply", `{"a":7,"b":6}`},
		{"7 x 6 = ?", "calculator_multiply", `{"a":7,"b":6}`},
		{"subtract 3 from 10", "calculator_subtract", `{"a":10,"b":3}`},
		{"10 minus 3", "calculator_subtract", `{"a":10,"b":3}`},
		{"divide 10 by 4", "calculator_divide", `{"a":10,"b":4}`},
		{"read notes.txt", "fs/read_file", `{"path":"notes.txt"}`},
		{"Can you show me the contents of ./docs/README.md?", "fs/read_file", `{"path":"./docs/README.md"}`},
		{"open /etc/hosts", "fs/read_file", `{"path":"/etc/hosts"}`},
		{`echo "Hello, World!"`, "echo", `{"text":"Hello, World!"}`},
		{"echo hello there", "echo", `{"text":"hello there"}`},
		{"What's the weather in Tokyo?", "weather-service/getWeather", `{"city":"Tokyo"}`},
		{"weather in Paris, imperial please", "weather-service/getWeather", `{"city":"Paris","units":"imperial"}`},
		{"use calculator_divide on 9 and 3", "calculator_divide", `{"a":9,"b":3}`},
	} {
		t.Run(tc.request, func(t *testing.T) {
			resp := complete(t, llm.Request{
				Messages: []llm.Message{{Role: llm.RoleSystem, Content: "You are helpful."}, {Role: llm.RoleUser, Content: tc.request}},
				Tools:    offlineTools,
			})
			if len(resp.ToolCalls) != 1 {
				t.Fatalf("no tool call; answer %q", resp.Content)
			}
			call := resp.ToolCalls[0]
			if call.Name != tc.tool || string(call.Arguments) != tc.args {
				t.Errorf("called %s(%s), want %s(%s)", call.Name, call.Arguments, tc.tool, tc.args)
			}
			if resp.FinishReason != llm.FinishToolCalls || call.ID == "" || resp.Model != llm.OfflineModel {
				t.Errorf("finish %q, id %q, model %q", resp.FinishReason, call.ID, resp.Model)
			}
			if !strings.Contains(resp.Reasoning, tc.tool) || !strings.HasSuffix(resp.Reasoning, llm.OfflineLabel) {
				t.Errorf("reasoning %q", resp.Reasoning)
			}
		})
	}
}

func TestOfflineSchemaFilling(t *testing.T) {
	for _, tc := range []struct {
		name, request, params, args string
	}{
		{"order of the schema", "add 1 and 2",
			`{"properties":{"y":{"type":"number"},"x":{"type":"number"}},"required":["x","y"]}`, `{"x":2,"y":1}`},
		{"required before optional", "add 2 and 3",
			`{"properties":{"precision":{"type":"integer"},"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`, `{"a":2,"b":3}`},
		{"optional numbers take what is left", "add 2 and 3 rounding to 1",
			`{"properties":{"precision":{"type":"integer"},"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`, `{"a":2,"b":3,"precision":1}`},
		{"integers", "add 4 and 5", `{"properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`, `{"a":4,"b":5}`},
		{"array of numbers", "sum 1 2 3 4", `{"properties":{"numbers":{"type":"array","items":{"type":"number"}}},"required":["numbers"]}`, `{"numbers":[1,2,3,4]}`},
		{"nullable type list", "add 2 and 3", `{"properties":{"a":{"type":["null","number"]},"b":{"anyOf":[{"type":"number"},{"type":"null"}]}},"required":["a","b"]}`, `{"a":2,"b":3}`},
		{"enum named", "add 2 and 3 in hex", `{"properties":{"a":{"type":"number"},"b":{"type":"number"},"base":{"enum":["dec","hex"]}},"required":["a","b","base"]}`, `{"a":2,"b":3,"base":"hex"}`},
		{"enum defaults to first when required", "add 2 and 3", `{"properties":{"a":{"type":"number"},"b":{"type":"number"},"base":{"type":"string","enum":["dec","hex"]}},"required":["a","b","base"]}`, `{"a":2,"b":3,"base":"dec"}`},
		{"required boolean", "add 2 and 3", `{"properties":{"a":{"type":"number"},"b":{"type":"number"},"exact":{"type":"boolean"}},"required":["a","b","exact"]}`, `{"a":2,"b":3,"exact":false}`},
		{"optional boolean left out", "add 2 and 3", `{"properties":{"a":{"type":"number"},"b":{"type":"number"},"exact":{"type":"boolean"}},"required":["a","b"]}`, `{"a":2,"b":3}`},
		{"required object", "add 2 and 3", `{"properties":{"a":{"type":"number"},"b":{"type":"number"},"opts":{"type":"object"}},"required":["a","b","opts"]}`, `{"a":2,"b":3,"opts":{}}`},
		{"no parameters", "add", ``, `{}`},
		{"file property", "add notes.txt", `{"properties":{"file_name":{"type":"string"}},"required":["file_name"]}`, `{"file_name":"notes.txt"}`},
		{"quoted text", "add 'buy milk' to the list", `{"properties":{"item":{"type":"string"}},"required":["item"]}`, `{"item":"buy milk"}`},
		{"optional string not guessed", "add 2 and 3 quickly", `{"properties":{"a":{"type":"number"},"b":{"type":"number"},"note":{"type":"string"}},"required":["a","b"]}`, `{"a":2,"b":3}`},
		{"undescribed required property", "add 2", `{"properties":{},"required":["x"]}`, `{"x":2}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := complete(t, llm.Request{
				Messages: []llm.Message{{Role: llm.RoleUser, Content: tc.request}},
				Tools:    []llm.Tool{{Name: "add", Description: "Adds things", Parameters: schema(tc.params)}},
			})
			if len(resp.ToolCalls) != 1 {
				t.Fatalf("no tool call; answer %q", resp.Content)
			}
			if got := string(resp.ToolCalls[0].Arguments); got != tc.args {
				t.Errorf("arguments %s, want %s", got, tc.args)
			}
		})
	}
}

func TestOfflineAnswersPlainly(t *testing.T) {
	for _, tc := range []struct {
		name  string
		req   llm.Request
		wants []string
	}{
		{"unrelated question", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "Who wrote Hamlet?"}}, Tools: offlineTools},
			[]string{"offline rule-based model", "calculator_add", "fs/read_file", "OPENAI_API_KEY"}},
		{"no tools", llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "add 2 and 3"}}},
			[]string{"offline rule-based model", "No tools are available"}},
		{"no user message", llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be nice."}}, Tools: offlineTools},
			[]string{"offline rule-based model"}},
		{"empty request", llm.Request{}, []string{"offline rule-based model"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := complete(t, tc.req)
			if len(resp.ToolCalls) != 0 {
				t.Fatalf("called %s(%s)", resp.ToolCalls[0].Name, resp.ToolCalls[0].Arguments)
			}
			if !strings.HasSuffix(resp.Content, llm.OfflineLabel) || resp.FinishReason != llm.FinishStop {
				t.Errorf("answer %q, finish %q", resp.Content, resp.FinishReason)
			}
			for _, w := range tc.wants {
				if !strings.Contains(resp.Content, w) {
					t.Errorf("answer %q lacks %q", resp.Content, w)
				}
			}
		})
	}
}

func TestOfflineStatesResults(t *testing.T) {
	call := func(id, name, args string) llm.Message {
		return llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Name: name, Arguments: json.RawMessage(args)}}}
	}
	result := func(id, content string) llm.Message {
		return llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: content}
	}
	ask := llm.Message{Role: llm.RoleUser, Content: "add 2 and 3"}
	read := llm.Message{Role: llm.RoleUser, Content: "@helper read notes.txt"}
	readCall := call("c1", "fs/read_file", `{"path":"notes.txt"}`)
	for _, tc := range []struct {
		name string
		msgs []llm.Message
		want string
	}{
		{"operation", []llm.Message{ask, call("c1", "calculator_add", `{"a":2,"b":3}`), result("c1", "5")},
			"2 + 3 = 5. (offline model)"},
		{"MCP result", []llm.Message{ask, call("c1", "calculator_add", `{"a":2,"b":3}`), result("c1", `{"content":[{"type":"text","text":"5"}],"isError":false}`)},
			"2 + 3 = 5. (offline model)"},
		{"number without operands", []llm.Message{ask, call("c1", "calculator_add", `{}`), result("c1", "5")},
			"You asked: add 2 and 3. calculator_add returned: 5. (offline model)"},
		{"one word of a file", []llm.Message{read, readCall, result("c1", "hello")},
			"You asked: read notes.txt. fs/read_file returned: hello. (offline model)"},
		{"sentence", []llm.Message{ask, call("c1", "calculator_add", `{"a":2,"b":3}`), result("c1", "The sum is 5")},
			"You asked: add 2 and 3. calculator_add returned: The sum is 5. (offline model)"},
		{"MCP error", []llm.Message{ask, call("c1", "calculator_divide", `{}`), result("c1", `{"content":[{"type":"text","text":"Division by zero"}],"isError":true}`)},
			"You asked: add 2 and 3. calculator_divide failed: Division by zero. (offline model)"},
		{"plain error", []llm.Message{read, readCall, result("c1", "Error: no such file")},
			"You asked: read notes.txt. fs/read_file failed: no such file. (offline model)"},
		{"Go file error", []llm.Message{read, readCall, result("c1", "Error: statat notes.txt: no such file or directory")},
			"You asked: read notes.txt. fs/read_file failed: no such file: notes.txt. (offline model)"},
		{"long text", []llm.Message{read, readCall, result("c1", "line one\nline two\n")},
			"You asked: read notes.txt. fs/read_file returned:\n\nline one\nline two\n\n(offline model)"},
		{"several", []llm.Message{ask,
			{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Name: "calculator_add"}, {ID: "m", Name: "calculator_multiply"}}},
			result("a", "5"), result("m", "42")},
			"You asked: add 2 and 3. The results:\n- calculator_add: 5\n- calculator_multiply: 42\n\n(offline model)"},
		{"unknown call", []llm.Message{ask, result("zz", "7")}, "You asked: add 2 and 3. the tool returned: 7. (offline model)"},
		// A person's no, with the reason and the words they gave, and the
		// reference SDK's wording of one.
		{"rejected", []llm.Message{{Role: llm.RoleUser, Content: "write hi to a.txt"}, call("c1", "fs/write_file", `{"path":"a.txt","content":"hi"}`),
			result("c1", `Error: human rejected the proposal to call write_file on fs (reason: unsafe): "not in this folder"`)},
			`You asked: write hi to a.txt. I proposed fs/write_file (content: hi, path: a.txt), and human rejected it (unsafe): "not in this folder". So it was not done. (offline model)`},
		{"rejected without reason", []llm.Message{{Role: llm.RoleUser, Content: "write hi to a.txt"}, call("c1", "fs/write_file", `{"path":"a.txt","content":"hi"}`),
			result("c1", `Error: you rejected the proposal to call write_file on fs`)},
			`You asked: write hi to a.txt. I proposed fs/write_file (content: hi, path: a.txt), and you rejected it. So it was not done. (offline model)`},
		{"rejected, the reference's words", []llm.Message{{Role: llm.RoleUser, Content: "write hi to a.txt"}, call("c1", "fs/write_file", `{"path":"a.txt","content":"hi"}`),
			result("c1", `Error: Proposal rejected by human: disagree`)},
			`You asked: write hi to a.txt. I proposed fs/write_file (content: hi, path: a.txt), and human rejected it (disagree). So it was not done. (offline model)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := complete(t, llm.Request{Messages: tc.msgs, Tools: offlineTools})
			if len(resp.ToolCalls) != 0 {
				t.Fatalf("called a tool again after its result: %+v", resp.ToolCalls)
			}
			if resp.Content != tc.want {
				t.Errorf("answer %q, want %q", resp.Content, tc.want)
			}
		})
	}

	// A new request after an answered one is planned afresh.
	resp := complete(t, llm.Request{Tools: offlineTools, Messages: []llm.Message{
		ask, call("c1", "calculator_add", `{"a":2,"b":3}`), result("c1", "5"), {Role: llm.RoleAssistant, Content: "2 + 3 = 5."},
		{Role: llm.RoleUser, Content: "now multiply 5 by 4"},
	}})
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "calculator_multiply" || string(resp.ToolCalls[0].Arguments) != `{"a":5,"b":4}` {
		t.Errorf("second request: %+v", resp)
	}
}

func TestOfflineDeterministicAndStreamed(t *testing.T) {
	p := llm.NewOffline()
	ctx := context.Background()
	for _, text := range []string{"add 2 and 3", "read notes.txt", "tell me a joke"} {
		req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}, Tools: offlineTools}
		first, err := p.Complete(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			again, _ := p.Complete(ctx, req)
			if diff := cmp.Diff(first, again); diff != "" {
				t.Fatalf("%q answered differently (-first +again):\n%s", text, diff)
			}
		}
		var content, reasoning strings.Builder
		var calls []llm.ToolCall
		streamed, err := p.Stream(ctx, req, func(d llm.Delta) {
			content.WriteString(d.Content)
			reasoning.WriteString(d.Reasoning)
			if d.ToolCall != nil {
				calls = append(calls, llm.ToolCall{ID: d.ToolCall.ID, Name: d.ToolCall.Name, Arguments: json.RawMessage(d.ToolCall.Arguments)})
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, streamed); diff != "" {
			t.Errorf("%q streamed differently (-complete +stream):\n%s", text, diff)
		}
		if content.String() != first.Content || reasoning.String() != first.Reasoning || !cmp.Equal(calls, first.ToolCalls, cmp.Comparer(func(a, b json.RawMessage) bool { return string(a) == string(b) })) {
			t.Errorf("%q: deltas do not add up to the answer", text)
		}
		if first.Usage.TotalTokens == 0 || first.Usage.TotalTokens != first.Usage.PromptTokens+first.Usage.CompletionTokens {
			t.Errorf("usage %+v", first.Usage)
		}
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Complete(cancelled, llm.Request{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Complete on a cancelled context: %v", err)
	}
	if _, err := p.Stream(cancelled, llm.Request{}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Stream on a cancelled context: %v", err)
	}
	if p.Name() != "offline" || p.Model() != llm.OfflineModel {
		t.Errorf("name %q model %q", p.Name(), p.Model())
	}
}

// FuzzOffline checks that no request or schema makes the offline model
// panic or call a tool with arguments that are not a JSON object.
func FuzzOffline(f *testing.F) {
	for _, seed := range []struct{ text, params string }{
		{"add 2 and 3", twoNumbers},
		{"read notes.txt", `{"properties":{"path":{"type":"string"}},"required":["path"]}`},
		{`echo "unterminated`, `{"properties":{"text":{}}}`},
		{"'quoted' “curly” ‘single’ `tick`", `{"properties":{"a":{"type":["string"]}},"required":["a","b"]}`},
		{"2+3*4/5-6 x 7 ÷ 8", `{"properties":[]}`},
		{"-", `null`},
		{"inf NaN 1e9 0x10 1,000 $5 15%", `"string"`},
		{"add", `{"properties":{"a":true,"b":null,"c":{"type":7},"d":{"enum":[]},"e":{"enum":[null]},"f":{"anyOf":[{"anyOf":[]}]}},"required":["a","b","c","d","e","f"]}`},
		{"\xff\xfe add ./ ~/ ../ .txt a.b", `{"type":"object","properties":{"items":{"type":"array","items":{"type":"string"}}},"required":["items"]}`},
		{"", `{`},
	} {
		f.Add(seed.text, seed.params)
	}
	f.Fuzz(func(t *testing.T, text, params string) {
		req := llm.Request{
			Messages: []llm.Message{{Role: llm.RoleUser, Content: text}},
			Tools: []llm.Tool{
				{Name: "add", Description: "Add numbers", Parameters: json.RawMessage(params)},
				{Name: "read_file", Description: text, Parameters: json.RawMessage(params)},
			},
		}
		resp, err := llm.NewOffline().Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range resp.ToolCalls {
			var m map[string]any
			if err := json.Unmarshal(c.Arguments, &m); err != nil {
				t.Fatalf("arguments %s: %v", c.Arguments, err)
			}
		}
		if len(resp.ToolCalls) == 0 && !strings.HasSuffix(resp.Content, llm.OfflineLabel) {
			t.Fatalf("unlabelled answer %q", resp.Content)
		}
	})
}
