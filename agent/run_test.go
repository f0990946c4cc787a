package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
)

// TestRun drives the headless loop: a tool that works, one that fails, one
// that does not exist, and the answer.
func TestRun(t *testing.T) {
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMCall(
			testutil.LLMToolCall{Name: "double", Arguments: `{"n":21}`},
			testutil.LLMToolCall{Name: "broken", Arguments: `{}`},
			testutil.LLMToolCall{Name: "missing", Arguments: `{}`},
			testutil.LLMToolCall{Name: "double", Arguments: `[1]`},
		),
		testutil.LLMReply("42"),
	)
	tools := []agent.Tool{
		{Tool: llm.Tool{Name: "double", Description: "Double n"}, Call: func(_ context.Context, args json.RawMessage) (string, error) {
			var in struct{ N int }
			if err := json.Unmarshal(args, &in); err != nil {
				return "", err
			}
			return itoa(2 * in.N), nil
		}},
		{Tool: llm.Tool{Name: "broken"}, Call: func(context.Context, json.RawMessage) (string, error) {
			return "", errors.New("out of order")
		}},
	}
	var observed []string
	out, err := agent.Run(context.Background(), agent.RunOptions{
		Provider:      openAI(t, srv),
		Messages:      []llm.Message{{Role: llm.RoleUser, Content: "double 21"}},
		Tools:         tools,
		OnObservation: func(c llm.ToolCall, r string) { observed = append(observed, c.Name+": "+r) },
	})
	if err != nil || out != "42" {
		t.Fatalf("Run: %q, %v", out, err)
	}
	want := []string{"double: 42", "broken: Error: out of order", `missing: Error: unknown tool "missing"`, "double: Error: the arguments of double must be a JSON object, got [1]"}
	if strings.Join(observed, "\n") != strings.Join(want, "\n") {
		t.Errorf("observations:\n%s", strings.Join(observed, "\n"))
	}

	// A cancelled run stops with the cause.
	slow := slowModel(t, "late", 5*time.Second)
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel(errors.New("enough")) }()
	if _, err := agent.Run(ctx, agent.RunOptions{Provider: openAI(t, slow), Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err == nil || !strings.Contains(err.Error(), "enough") {
		t.Errorf("cancelled run: %v", err)
	}
	if _, err := agent.Run(context.Background(), agent.RunOptions{}); !errors.Is(err, agent.ErrNoProvider) {
		t.Errorf("no provider: %v", err)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
