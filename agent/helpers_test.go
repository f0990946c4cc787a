package agent_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/agent"
	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/llm"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// agentSpace: a trusted human, a calculator, an agent that may call tools,
// one that may also open streams and one that may only propose them. Tokens are "<id>-token".
var agentSpace = testutil.SpaceYAML("agents",
	testutil.Member("human", "*"),
	testutil.Member("calc", "chat"),
	testutil.Member("agent", "chat", "chat/*", "reasoning/*", "mcp/request", "participant/*"),
	testutil.Member("thinker", "chat", "chat/*", "reasoning/*", "mcp/request", "participant/*", "stream/*"),
	testutil.Member("proposer", "chat", "chat/*", "reasoning/*", "mcp/proposal", "mcp/withdraw",
		`{kind: mcp/request, payload: {method: "tools/list"}}`, "participant/*"),
)

// addTool is the calculator's tool.
var addTool = testutil.ArithTool("add", "Add two numbers", func(a, b float64) float64 { return a + b })

// multiplyTool is the calculator's other tool.
var multiplyTool = testutil.ArithTool("multiply", "Multiply two numbers", func(a, b float64) float64 { return a * b })

// join connects participant id and closes it when the test ends.
func join(t testing.TB, g *testutil.Gateway, id string, tools ...participant.Tool) *participant.Participant {
	t.Helper()
	return testutil.JoinParticipant(t, g, id+"-token", participant.Options{}, tools...)
}

// participantOpts are the options of participant id in g's space.
func participantOpts(g *testutil.Gateway, id string) participant.Options {
	return participant.Options{Client: client.Options{
		Gateway: "ws://" + g.Addr, Space: g.Config.Space.ID, Token: id + "-token",
	}}
}

// connect connects a, waits until it is ready and closes it when the test
// ends.
func connect(t testing.TB, a *agent.Agent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Connect(ctx); err != nil {
		t.Fatalf("connect %s: %v", a.Participant().ID(), err)
	}
	t.Cleanup(func() { _ = a.Close() })
	testutil.WaitReady(t, a.Participant().Client())
}

// startAgent connects agent id with provider and cfg, and waits until it has
// discovered the calculator's tools.
func startAgent(t *testing.T, g *testutil.Gateway, id string, provider llm.Provider, cfg agent.Config) *agent.Agent {
	t.Helper()
	a := testutil.StartAgent(t, g, id+"-token", provider, cfg)
	testutil.WaitTools(t, a)
	return a
}

// waitAsked waits until the scripted model srv has been asked.
func waitAsked(t *testing.T, srv *testutil.LLMServer) {
	t.Helper()
	testutil.WaitFor(t, 5*time.Second, "the model is asked", func() bool { return len(srv.Requests()) > 0 })
}

// openAI returns the real OpenAI provider pointed at a scripted server.
func openAI(t *testing.T, s *testutil.LLMServer) llm.Provider {
	t.Helper()
	p, err := llm.NewOpenAI(llm.Config{BaseURL: s.URL(), APIKey: "test-key", MaxRetries: -1, Model: "test-model"})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// recorder keeps every envelope one participant sees.
type recorder struct {
	mu   sync.Mutex
	envs []*protocol.Envelope
}

// record starts recording what p sees.
func record(t *testing.T, p *participant.Participant) *recorder {
	r := &recorder{}
	remove := p.Client().OnMessage(func(env *protocol.Envelope) {
		r.mu.Lock()
		r.envs = append(r.envs, env.Clone())
		r.mu.Unlock()
	})
	t.Cleanup(remove)
	return r
}

// all returns the envelopes seen so far.
func (r *recorder) all() []*protocol.Envelope {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*protocol.Envelope(nil), r.envs...)
}

// wait returns the first envelope seen that satisfies match, failing the
// test after 10 s.
func (r *recorder) wait(t *testing.T, what string, match func(*protocol.Envelope) bool) *protocol.Envelope {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		for _, env := range r.all() {
			if match(env) {
				return env
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("never saw %s; saw:\n%s", what, dump(r.all()))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// dump lists envelopes one a line, for failure messages.
func dump(envs []*protocol.Envelope) string {
	var b strings.Builder
	for _, e := range envs {
		b.WriteString(e.From + " " + e.Kind + " to=" + strings.Join(e.To, ",") + " corr=" + strings.Join(e.CorrelationID, ",") + " ctx=" + e.Context + " " + string(e.Payload) + "\n")
	}
	return b.String()
}

// chatText returns a chat envelope's text.
func chatText(env *protocol.Envelope) string {
	var c protocol.Chat
	_ = env.DecodePayload(&c)
	return c.Text
}

// send sends a chat from p and returns its id.
func sendChat(t *testing.T, p *participant.Participant, text string, to ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id, err := p.Chat(ctx, text, to...)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// answerTo matches the chat from `from` correlated to id.
func answerTo(from, id string) func(*protocol.Envelope) bool {
	return func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindChat && e.From == from && e.CorrelatesWith(id)
	}
}

// sendEnv sends env from p.
func sendEnv(t *testing.T, p *participant.Participant, env *protocol.Envelope) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Send(ctx, env); err != nil {
		t.Fatal(err)
	}
}

// addingModel is a scripted model whose first answer calls calc_add with 4
// and 5 and whose second is answer.
func addingModel(t *testing.T, answer string) *testutil.LLMServer {
	t.Helper()
	srv := testutil.NewLLMServer(t)
	srv.Script(
		testutil.LLMCall(testutil.LLMToolCall{Name: "calc_add", Arguments: `{"a":4,"b":5}`}),
		testutil.LLMReply(answer),
	)
	return srv
}

// lastMessage is the last message of the last request srv received: what
// the agent gave the model last, such as a tool's result.
func lastMessage(srv *testutil.LLMServer) testutil.LLMMessage {
	reqs := srv.Requests()
	last := reqs[len(reqs)-1].Messages
	return last[len(last)-1]
}

// calcSpace starts a gateway for agentSpace with human and the
// calculator, serving add, joined; it returns the gateway and human.
func calcSpace(t *testing.T) (*testutil.Gateway, *participant.Participant) {
	t.Helper()
	g := startGateway(t)
	human := join(t, g, "human")
	join(t, g, "calc", addTool)
	return g, human
}

// startGateway starts a gateway for agentSpace.
func startGateway(t *testing.T) *testutil.Gateway {
	return testutil.StartGateway(t, agentSpace, gateway.Options{})
}

// slowModel returns a scripted model whose first answer, text, takes delay.
func slowModel(t *testing.T, text string, delay time.Duration) *testutil.LLMServer {
	t.Helper()
	srv := testutil.NewLLMServer(t)
	step := testutil.LLMReply(text)
	step.Delay = delay
	srv.Script(step)
	return srv
}

// quickFloor is floor control with a wait of milliseconds.
var quickFloor = agent.FloorControl{MinDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
