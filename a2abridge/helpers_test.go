package a2abridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mew-protocol/mew/a2a"
	"github.com/mew-protocol/mew/a2abridge"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// bridgeSpace is the space of the tests: helper is the bridge, human may
// do anything, other may chat and call tools, intern may only propose.
var bridgeSpace = testutil.SpaceYAML("a2a",
	testutil.Member("human", "*"),
	testutil.Member("helper", "chat", "chat/*", "reasoning/*", "participant/*", "mcp/response"),
	testutil.Member("other", "chat", "chat/*", "reasoning/*", "mcp/request"),
	testutil.Member("intern", "mcp/proposal", "mcp/withdraw"),
)

// remote is a real A2A agent for the tests (an a2a.Server on
// 127.0.0.1): skill echo answers "echo: TEXT" as an artifact after a
// status; book asks "Which city?" and answers "Booked CITY"; slow works
// until canceled; quit cancels its own task; fail fails.
type remote struct {
	URL      string
	canceled chan string // ids of the tasks whose run was canceled
	mu       sync.Mutex
	skills   []string // metadata skillId of each message, "" for none
}

func startRemote(t *testing.T, streaming bool) *remote {
	t.Helper()
	r := &remote{canceled: make(chan string, 16)}
	card := &a2a.AgentCard{Name: "Helper", Description: "Helps.", Version: "1.0.0",
		Capabilities:       a2a.AgentCapabilities{Streaming: a2a.Bool(streaming)},
		DefaultInputModes:  []string{"text/plain"},
		DefaultOutputModes: []string{"text/plain"},
		Skills: []a2a.AgentSkill{
			{ID: "echo", Name: "Echo", Description: "Repeats what it is told.", Tags: []string{"test"}, Examples: []string{"hello"}},
			{ID: "book", Name: "Book", Description: "Books a trip.", Tags: []string{"test"}},
			{ID: "slow", Name: "Slow", Description: "Takes its time.", Tags: []string{"test"}},
		}}
	r.URL = serve(t, a2a.Options{Card: card, Executor: a2a.ExecutorFunc(r.execute)})
	return r
}

// serve serves the A2A agent of opts (its card gets its interface) on
// 127.0.0.1 until the test ends, and returns its URL.
func serve(t *testing.T, opts a2a.Options) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	opts.Card.SupportedInterfaces = []a2a.AgentInterface{{URL: url + "/", ProtocolBinding: a2a.BindingJSONRPC, ProtocolVersion: a2a.ProtocolVersion}}
	srv, err := a2a.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	hs := &httptest.Server{Listener: l, Config: &http.Server{Handler: srv}}
	hs.Start()
	t.Cleanup(func() { hs.CloseClientConnections(); _ = srv.Close(); hs.Close() })
	return url
}

func (r *remote) execute(ctx context.Context, run *a2a.Run) error {
	var meta struct {
		SkillID string `json:"skillId"`
	}
	_ = json.Unmarshal(run.Message.Metadata, &meta)
	r.mu.Lock()
	r.skills = append(r.skills, meta.SkillID)
	r.mu.Unlock()
	text := run.Message.Text()
	what := meta.SkillID
	if what == "" {
		what, _, _ = strings.Cut(strings.TrimSpace(strings.ReplaceAll(text, "@helper", "")), " ")
	}
	switch {
	case len(run.History) > 0: // the answer to "Which city?"
		return run.AddArtifact(a2a.Artifact{Name: "booking", Parts: []a2a.Part{a2a.TextPart("Booked " + text)}})
	case what == "book":
		return run.End(a2a.TaskStateInputRequired, a2a.TextPart("Which city?"))
	case what == "slow":
		_ = run.Working("starting the long job")
		<-ctx.Done()
		r.canceled <- run.TaskID
		return ctx.Err()
	case what == "quit":
		return run.End(a2a.TaskStateCanceled, a2a.TextPart("I gave up"))
	case what == "fail":
		return errors.New("no luck today")
	}
	_ = run.Working("thinking about " + text)
	return run.AddArtifact(a2a.Artifact{Name: "reply", Parts: []a2a.Part{a2a.TextPart("echo: " + text)}})
}

func (r *remote) skillIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.skills...)
}

// startBridge runs a bridge as helper of g's space to the agent at url
// until the test ends, when Run must return nil.
func startBridge(t *testing.T, g *testutil.Gateway, url string, opts a2abridge.Options) *a2abridge.Bridge {
	t.Helper()
	opts.URL = url
	opts.Participant.Client.Gateway = "ws://" + g.Addr
	opts.Participant.Client.Space = g.Config.Space.ID
	if opts.Participant.Client.Token == "" {
		opts.Participant.Client.Token = "helper-token"
	}
	b, err := a2abridge.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testutil.StartRun(t, b.Run, b.Ready()); err != nil {
		t.Fatalf("bridge: %v", err)
	}
	testutil.WaitReady(t, b.Participant().Client())
	return b
}

// envelopes collects what p receives.
type envelopes chan *protocol.Envelope

func watch(p *participant.Participant) envelopes {
	ch := make(envelopes, 1024)
	p.Client().OnMessage(func(env *protocol.Envelope) {
		select {
		case ch <- env:
		default:
		}
	})
	return ch
}

// wait returns the first envelope of kind that ok accepts.
func (ch envelopes) wait(t *testing.T, what, kind string, ok func(*protocol.Envelope) bool) *protocol.Envelope {
	t.Helper()
	return testutil.ReceiveWhere(t, ch, 15*time.Second, what, func(env *protocol.Envelope) bool {
		return env.Kind == kind && (ok == nil || ok(env))
	})
}

// chatText is a chat envelope's text.
func chatText(env *protocol.Envelope) string {
	var c protocol.Chat
	_ = env.DecodePayload(&c)
	return c.Text
}

// fromHelper accepts envelopes of the bridge correlated to id (any, for
// "").
func fromHelper(id string) func(*protocol.Envelope) bool {
	return func(env *protocol.Envelope) bool {
		return env.From == "helper" && (id == "" || env.CorrelatesWith(id))
	}
}

// joinAs joins a participant of g with token.
func joinAs(t *testing.T, g *testutil.Gateway, token string) *participant.Participant {
	t.Helper()
	return testutil.JoinParticipant(t, g, token, participant.Options{})
}

func startSpace(t *testing.T) *testutil.Gateway {
	t.Helper()
	return testutil.StartGateway(t, bridgeSpace, gateway.Options{})
}

// spaceWithHuman starts a space of its own for a case, so that a bridge
// that left is not confused with the next case's, and joins human to it.
func spaceWithHuman(t *testing.T) (*testutil.Gateway, *participant.Participant) {
	t.Helper()
	g := startSpace(t)
	return g, joinAs(t, g, "human-token")
}

// testCtx is a context for one step of a test.
func testCtx(t *testing.T) context.Context { return testutil.Context(t, 30*time.Second) }

// callTool calls tool of helper as p and decodes the result.
func callTool(t *testing.T, p *participant.Participant, tool string, args any) (*participant.ToolResult, map[string]string) {
	t.Helper()
	raw, err := p.Request(testCtx(t), "helper", map[string]any{"method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	if err != nil {
		t.Fatalf("tools/call %s: %v", tool, err)
	}
	var res participant.ToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	var st map[string]string
	_ = json.Unmarshal(res.StructuredContent, &st)
	return &res, st
}

// participantOpts are the options of helper's participant in g's space.
func participantOpts(g *testutil.Gateway) participant.Options {
	var o participant.Options
	o.Client.Gateway = "ws://" + g.Addr
	o.Client.Space = g.Config.Space.ID
	o.Client.Token = "helper-token"
	return o
}
