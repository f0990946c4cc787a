package agent_test

import (
	"context"
	"testing"
	"time"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/protocol"
)

// BenchmarkModelCall is the baseline: one call of the scripted model through
// the OpenAI provider.
func BenchmarkModelCall(b *testing.B) {
	srv := testutil.NewLLMServer(b)
	srv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep { return testutil.LLMReply("ok") })
	prov, err := llm.NewOpenAI(llm.Config{BaseURL: srv.URL(), APIKey: "k", MaxRetries: -1})
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
	for b.Loop() {
		if _, err := prov.Complete(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnswer is a question to the agent and its answer, through a real
// gateway, with the same model: the agent's own cost is the difference with
// BenchmarkModelCall (acknowledgement, reasoning envelopes, the answer).
func BenchmarkAnswer(b *testing.B) {
	for _, reasoning := range []bool{false, true} {
		name := "plain"
		if reasoning {
			name = "reasoning"
		}
		b.Run(name, func(b *testing.B) {
			g := testutil.StartGateway(b, agentSpace, gateway.Options{Limits: gateway.Limits{Rate: 1e6, Burst: 1e6}})
			srv := testutil.NewLLMServer(b)
			srv.SetFallback(func(testutil.LLMRequest) testutil.LLMStep { return testutil.LLMReply("ok") })
			prov, err := llm.NewOpenAI(llm.Config{BaseURL: srv.URL(), APIKey: "k", MaxRetries: -1})
			if err != nil {
				b.Fatal(err)
			}
			human := join(b, g, "human")
			a, err := agent.New(agent.Options{Participant: participantOpts(g, "agent"), Provider: prov,
				Config: agent.Config{ReasoningEnabled: reasoning, HistoryLength: -1, DiscoveryWait: -1}})
			if err != nil {
				b.Fatal(err)
			}
			connect(b, a)
			answers := make(chan string, 1)
			human.Client().OnKind(protocol.KindChat, func(e *protocol.Envelope) {
				if e.From == "agent" && len(e.CorrelationID) > 0 {
					answers <- e.CorrelationID[0]
				}
			})
			ctx := context.Background()
			for b.Loop() {
				id, err := human.Chat(ctx, "hi", "agent")
				if err != nil {
					b.Fatal(err)
				}
				select {
				case got := <-answers:
					if got != id {
						b.Fatalf("answer to %s, want %s", got, id)
					}
				case <-time.After(10 * time.Second):
					b.Fatal("no answer")
				}
			}
		})
	}
}
