package toolsagent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/examples/travel-desk/travelmcp"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/toolsagent"
)

// envServer makes the test binary run the travel-desk MCP server
// (travelmcp) on its standard input and output instead of the tests.
const envServer = "MEW_TOOLSAGENT_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(envServer) != "" {
		os.Exit(travelmcp.Main())
	}
	goleak.VerifyTestMain(m)
}

// travelDefinition is a definition whose servers are this test binary
// serving travelmcp: "travel" (search_flights and weather_forecast, no
// approval needed) and "bookings" (book_flight; every call needs
// approval). %s are the binary, the call log and a second call log.
const travelDefinition = `
name: travel-desk
version: 2.1.0
description: Finds flights.
mode: tools
maxIterations: 4
timeout: 20s
mcpServers:
  travel:
    command: %q
    env: {MEW_TOOLSAGENT_TEST_SERVER: "1", TRAVELMCP_CALL_LOG: %q}
    permission: never
    tools: [search_flights, weather_forecast]
  bookings:
    command: %q
    env: {MEW_TOOLSAGENT_TEST_SERVER: "1", TRAVELMCP_CALL_LOG: %q}
    permission: always
tools:
  - name: find_flights
    description: Find flights.
    parameters:
      type: object
      properties:
        origin: {type: string}
        destination: {type: string}
        date: {type: string, minLength: 10, maxLength: 10}
        passengers: {type: integer, minimum: 1, default: 1}
      required: [origin, destination, date]
      additionalProperties: false
    prompt: "Find flights from {origin} to {destination} on {date} for {passengers}."
  - name: echo
    description: Repeats.
    parameters:
      type: object
      properties:
        text: {type: string}
    prompt: "Say {text}"
`

// travel is a loaded travelDefinition with its call logs.
type travel struct {
	def                *toolsagent.Definition
	callLog, bookedLog string
}

// loadTravel writes travelDefinition (with extra appended) and loads it.
func loadTravel(t *testing.T, extra string) travel {
	t.Helper()
	exe := testutil.Executable(t)
	dir := t.TempDir()
	tr := travel{callLog: filepath.Join(dir, "travel.jsonl"), bookedLog: filepath.Join(dir, "bookings.jsonl")}
	path := filepath.Join(dir, "desk.yaml")
	text := fmt.Sprintf(travelDefinition, exe, tr.callLog, exe, tr.bookedLog) + extra
	tr.def = testutil.WriteDefinition(t, path, text)
	return tr
}

// calls returns the tools called, as a call log recorded them.
func calls(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			Tool string `json:"tool"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("call log line %q: %v", sc.Text(), err)
		}
		out = append(out, line.Tool)
	}
	return out
}

// newAgent starts an agent on def with the scripted model srv, closed when
// the test ends.
func newAgent(t *testing.T, def *toolsagent.Definition, srv *testutil.LLMServer) *toolsagent.Agent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	provider, err := llm.NewOpenAI(llm.Config{BaseURL: srv.URL(), APIKey: "k", Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := toolsagent.New(ctx, toolsagent.Options{Definition: def, Provider: provider})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return a
}

// toolNames returns the names of the tools a model request offered.
func toolNames(r testutil.LLMRequest) []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Name)
	}
	return out
}

// lastToolMessage returns the content of the last tool message of r.
func lastToolMessage(r testutil.LLMRequest) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "tool" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// userMessage returns the content of the last user message of r.
func userMessage(r testutil.LLMRequest) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
