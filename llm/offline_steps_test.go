package llm_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/mew-protocol/mew/llm"
)

// travelTools are the travel-desk server's tools as an MCP client lists
// them: properties in alphabetical order, described.
var travelTools = []llm.Tool{
	{Name: "travel/search_flights", Description: "Search the flights from one city to another on a day.",
		Parameters: schema(`{"type":"object","properties":{"date":{"type":"string","description":"departure date, YYYY-MM-DD"},` +
			`"destination":{"type":"string","description":"arrival city"},"origin":{"type":"string","description":"departure city"}},` +
			`"required":["origin","destination","date"]}`)},
	{Name: "travel/weather_forecast", Description: "The weather forecast for a city on a day.",
		Parameters: schema(`{"type":"object","properties":{"city":{"type":"string","description":"the city"},` +
			`"date":{"type":"string","description":"the day, YYYY-MM-DD"}},"required":["city","date"]}`)},
}

// findFlightsPrompt is the travel-desk find_flights prompt, filled.
func findFlightsPrompt(origin, destination, date string) string {
	return fmt.Sprintf("Find flights from %s to %s on %s for 1 passenger(s), economy cabin.\n"+
		"Search with the travel tools, then answer with at most three options, best first: flight, departure\n"+
		"and arrival times, and the price for everyone. If there is no flight, say so.", origin, destination, date)
}

// TestOfflineFillsByMeaning: dates go into date fields, the places of
// "from X to Y" into origin and destination, whatever the schema's order.
func TestOfflineFillsByMeaning(t *testing.T) {
	for _, tc := range []struct {
		name, request string
		tools         []llm.Tool
		tool, args    string
	}{
		{"travel desk", findFlightsPrompt("Lisbon", "Paris", "2026-12-01"), travelTools,
			"travel/search_flights", `{"date":"2026-12-01","destination":"Paris","origin":"Lisbon"}`},
		{"two-word cities", findFlightsPrompt("New York", "San Francisco", "2027-01-31"), travelTools,
			"travel/search_flights", `{"date":"2027-01-31","destination":"San Francisco","origin":"New York"}`},
		{"lower case", "search flights from lisbon to paris on 2026-12-01", travelTools,
			"travel/search_flights", `{"date":"2026-12-01","destination":"paris","origin":"lisbon"}`},
		{"trip weather", "Plan a 3-day trip to Paris starting on 2026-12-01.\nCheck the weather forecast for each day first.", travelTools,
			"travel/weather_forecast", `{"city":"Paris","date":"2026-12-01"}`},
		{"format date, names from and to", "book a train from Porto to Faro on 2026-06-01 for 2", []llm.Tool{{Name: "book_train",
			Parameters: schema(`{"properties":{"seats":{"type":"integer"},"to":{"type":"string"},"from":{"type":"string"},"on":{"type":"string","format":"date"}},"required":["from","to","on","seats"]}`)}},
			"book_train", `{"from":"Porto","on":"2026-06-01","seats":2,"to":"Faro"}`},
		{"two dates in order", "book a hotel in Rome from 2026-05-01 to 2026-05-04", []llm.Tool{{Name: "book_hotel",
			Parameters: schema(`{"properties":{"city":{"type":"string"},"check_in":{"type":"string","format":"date"},"check_out":{"type":"string","format":"date"}},"required":["city","check_in","check_out"]}`)}},
			"book_hotel", `{"check_in":"2026-05-01","check_out":"2026-05-04","city":"Rome"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := complete(t, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: tc.request}}, Tools: tc.tools})
			if len(resp.ToolCalls) != 1 {
				t.Fatalf("no tool call; answer %q", resp.Content)
			}
			if c := resp.ToolCalls[0]; c.Name != tc.tool || string(c.Arguments) != tc.args {
				t.Errorf("called %s(%s), want %s(%s)", c.Name, c.Arguments, tc.tool, tc.args)
			}
		})
	}
}

// TestOfflineSaysWhatItCannotFill: no garbage in a field the request has no
// value for, but an answer that names the field, finished "incomplete".
func TestOfflineSaysWhatItCannotFill(t *testing.T) {
	for _, tc := range []struct {
		name, request string
		tools         []llm.Tool
		wants         []string
	}{
		{"no such day", findFlightsPrompt("Lisbon", "Paris", "2026-02-30"), travelTools,
			[]string{"travel/search_flights", "could not fill the field date (departure date, YYYY-MM-DD)"}},
		{"no places", "search flights on 2026-12-01", travelTools[:1],
			[]string{"could not fill the fields destination (arrival city) and origin (departure city)"}},
		{"a number short", "add 2", offlineTools[:1], []string{"calculator_add", "could not fill the field b (a number)"}},
		{"integer from a fraction", "add 2.5 and 1", []llm.Tool{{Name: "add",
			Parameters: schema(`{"properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`)}},
			[]string{"could not fill the field a (a whole number)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := complete(t, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: tc.request}}, Tools: tc.tools})
			if len(resp.ToolCalls) != 0 {
				t.Fatalf("called %s(%s)", resp.ToolCalls[0].Name, resp.ToolCalls[0].Arguments)
			}
			if resp.FinishReason != llm.FinishIncomplete || !strings.HasSuffix(resp.Content, llm.OfflineLabel) {
				t.Errorf("finish %q, answer %q", resp.FinishReason, resp.Content)
			}
			for _, w := range tc.wants {
				if !strings.Contains(resp.Content, w) {
					t.Errorf("answer %q lacks %q", resp.Content, w)
				}
			}
		})
	}
}

// call is one tool call of a run.
type call struct{ Name, Args string }

// runOffline runs the offline model as an agent would, with exec as the
// tools, for at most ten model calls, and returns the calls and the final
// answer. history is the conversation before the request.
func runOffline(t *testing.T, tools []llm.Tool, history []llm.Message, request string, exec func(name string, args map[string]any) string) ([]call, *llm.Response, []llm.Message) {
	t.Helper()
	msgs := append(history, llm.Message{Role: llm.RoleUser, Content: request})
	var calls []call
	for range 10 {
		resp := complete(t, llm.Request{Messages: msgs, Tools: tools})
		if len(resp.ToolCalls) == 0 {
			return calls, resp, append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content})
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls})
		for _, tc := range resp.ToolCalls {
			calls = append(calls, call{tc.Name, string(tc.Arguments)})
			var args map[string]any
			if err := json.Unmarshal(tc.Arguments, &args); err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: exec(tc.Name, args)})
		}
	}
	t.Fatalf("no answer after ten model calls: %+v", calls)
	return nil, nil, nil
}

// calculator runs the calculator tools of offlineTools.
func calculator(name string, args map[string]any) string {
	a, b := args["a"].(float64), args["b"].(float64)
	var r float64
	switch name {
	case "calculator_add":
		r = a + b
	case "calculator_subtract":
		r = a - b
	case "calculator_multiply":
		r = a * b
	case "calculator_divide":
		if b == 0 {
			return "Error: division by zero"
		}
		r = a / b
	default:
		return "Error: unknown tool " + name
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// TestOfflineArithmeticSteps: several operations are several calls, in the
// order of precedence, each given the results it needs.
func TestOfflineArithmeticSteps(t *testing.T) {
	for _, tc := range []struct {
		request string
		calls   []call
		answer  string
	}{
		{"what is 1.5 minus 4 plus 2", []call{{"calculator_subtract", `{"a":1.5,"b":4}`}, {"calculator_add", `{"a":-2.5,"b":2}`}},
			"1.5 - 4 + 2 = -0.5 (1.5 - 4 = -2.5, then -2.5 + 2 = -0.5). (offline model)"},
		{"2+3*4", []call{{"calculator_multiply", `{"a":3,"b":4}`}, {"calculator_add", `{"a":2,"b":12}`}},
			"2 + 3 × 4 = 14 (3 × 4 = 12, then 2 + 12 = 14). (offline model)"},
		{"10 divided by 4 times 3 minus 1", []call{{"calculator_divide", `{"a":10,"b":4}`}, {"calculator_multiply", `{"a":2.5,"b":3}`}, {"calculator_subtract", `{"a":7.5,"b":1}`}},
			"10 ÷ 4 × 3 - 1 = 6.5 (10 ÷ 4 = 2.5, then 2.5 × 3 = 7.5, then 7.5 - 1 = 6.5). (offline model)"},
		{"what is 1 divided by 0 plus 2", nil,
			"1 ÷ 0 + 2 has no value: it divides 1 by zero, and division by zero is undefined. (offline model)"},
		{"what is 2 plus 3", []call{{"calculator_add", `{"a":2,"b":3}`}}, "2 + 3 = 5. (offline model)"},
		{"what is 8 - 2 - 1", []call{{"calculator_subtract", `{"a":8,"b":2}`}, {"calculator_subtract", `{"a":6,"b":1}`}},
			"8 - 2 - 1 = 5 (8 - 2 = 6, then 6 - 1 = 5). (offline model)"},
		{"what is 8 - (2 - 1)", []call{{"calculator_subtract", `{"a":2,"b":1}`}, {"calculator_subtract", `{"a":8,"b":1}`}},
			"8 - (2 - 1) = 7 (2 - 1 = 1, then 8 - 1 = 7). (offline model)"},
		{"0.1 + 0.2", []call{{"calculator_add", `{"a":0.1,"b":0.2}`}}, "0.1 + 0.2 = 0.3. (offline model)"},
		{"what is 2 ^ 3 ^ 2", nil, "2 ^ 3 ^ 2 = 512. No tool here does ^, so the offline model worked it out itself. (offline model)"},
		{"what is -2^2", nil, "-2 ^ 2 = -4. No tool here does ^, so the offline model worked it out itself. (offline model)"},
		{"what is (-2)^2", nil, "(-2) ^ 2 = 4. No tool here does ^, so the offline model worked it out itself. (offline model)"},
		{"what is 10 ^ 400", nil, "10 ^ 400 has no value I can write: the result is too large or not a real number. (offline model)"},
	} {
		t.Run(tc.request, func(t *testing.T) {
			calls, resp, _ := runOffline(t, offlineTools, nil, tc.request, func(name string, args map[string]any) string { return calculator(name, args) })
			if diff := cmp.Diff(tc.calls, calls, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if resp.Content != tc.answer {
				t.Errorf("answer %q, want %q", resp.Content, tc.answer)
			}
		})
	}
}

// fsTools are the tools of the filesystem MCP server.
var fsTools = []llm.Tool{
	{Name: "fs/read_file", Description: "Read a text file", Parameters: schema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{Name: "fs/list_directory", Description: "List a directory: [DIR] and [FILE] entries", Parameters: schema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{Name: "fs/directory_tree", Description: "The tree of files under a directory, one path a line", Parameters: schema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	{Name: "fs/search_files", Description: "Find files under a directory whose name matches a glob or contains a text",
		Parameters: schema(`{"type":"object","properties":{"path":{"type":"string"},"pattern":{"type":"string"}},"required":["path","pattern"]}`)},
	{Name: "fs/list_allowed_directories", Description: "The directory this server may touch", Parameters: schema(`{"type":"object","properties":{}}`)},
}

// TestOfflineListsFiles: "list the files" lists the allowed directory,
// asking for it once, and the next time not at all.
func TestOfflineListsFiles(t *testing.T) {
	exec := func(name string, args map[string]any) string {
		switch name {
		case "fs/list_allowed_directories":
			return "/srv/files"
		case "fs/list_directory":
			if args["path"] != "/srv/files" {
				return "Error: statat " + fmt.Sprint(args["path"]) + ": no such file or directory"
			}
			return "[FILE] notes.txt\n[DIR] docs"
		}
		return "Error: unexpected call"
	}
	calls, resp, history := runOffline(t, fsTools, nil, "list the files", exec)
	want := []call{{"fs/list_allowed_directories", `{}`}, {"fs/list_directory", `{"path":"/srv/files"}`}}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if !strings.Contains(resp.Content, "[FILE] notes.txt\n[DIR] docs") {
		t.Errorf("answer %q", resp.Content)
	}
	calls, resp, _ = runOffline(t, fsTools, history, "list the files", exec)
	if diff := cmp.Diff(want[1:], calls); diff != "" {
		t.Errorf("second time, calls (-want +got):\n%s", diff)
	}
	if !strings.Contains(resp.Content, "notes.txt") {
		t.Errorf("second answer %q", resp.Content)
	}
	// A named directory needs no look-up; a missing file is said plainly.
	calls, _, _ = runOffline(t, fsTools, nil, "list the directory ./docs", exec)
	if diff := cmp.Diff([]call{{"fs/list_directory", `{"path":"./docs"}`}}, calls); diff != "" {
		t.Errorf("named directory, calls (-want +got):\n%s", diff)
	}
	_, resp, _ = runOffline(t, fsTools, nil, "read missing.txt", exec)
	if resp.Content != "You asked: read missing.txt. fs/read_file failed: unexpected call. (offline model)" {
		t.Errorf("answer %q", resp.Content)
	}
}

func TestPlainToolError(t *testing.T) {
	for in, want := range map[string]string{
		"Error: statat notes.txt: no such file or directory":   "no such file: notes.txt",
		"open /etc/shadow: permission denied":                  "permission denied: /etc/shadow",
		"fs/read_file: openat docs: is a directory":            "docs is a directory",
		"Error: lstat ../x: outside the allowed directory":     "../x is outside the allowed directory",
		"ENOENT: no such file or directory, open '/tmp/a.txt'": "no such file: /tmp/a.txt",
		"Error: Error: date \"x\": want YYYY-MM-DD":            "date \"x\": want YYYY-MM-DD",
		"mkdirat a: file exists":                               "a already exists",
		"division by zero":                                     "division by zero",
		"Error: stat weird: some other trouble":                "some other trouble: weird",
	} {
		if got := llm.PlainToolError(in); got != want {
			t.Errorf("PlainToolError(%q) = %q, want %q", in, got, want)
		}
	}
}
