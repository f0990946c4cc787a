package participant_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/participant"
	"github.com/mew-protocol/mew/protocol"
)

// scriptedGateway is a stand-in gateway for the cases our gateway makes
// impossible: it sends whatever the test says, from whoever the test says,
// so that the SDK's own checks of origin can be seen to hold. It accepts
// one connection.
type scriptedGateway struct {
	t    *testing.T
	url  string
	conn chan *websocket.Conn
	in   chan *protocol.Envelope // what the participant sent
}

func startScripted(t *testing.T) *scriptedGateway {
	t.Helper()
	sg := &scriptedGateway{t: t, conn: make(chan *websocket.Conn, 1), in: make(chan *protocol.Envelope, 64)}
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		sg.conn <- c
		go func() {
			for {
				_, b, err := c.Read(context.Background())
				if err != nil {
					return
				}
				env := new(protocol.Envelope)
				if json.Unmarshal(b, env) == nil {
					select {
					case sg.in <- env:
					default: // nobody is looking: never block the reader
					}
				}
			}
		}()
		<-stop
		_ = c.CloseNow()
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	sg.url = "ws" + strings.TrimPrefix(srv.URL, "http")
	return sg
}

// join connects a participant as "human", who sees calc in the space.
func (sg *scriptedGateway) join(opts participant.Options) (*participant.Participant, *websocket.Conn) {
	t := sg.t
	t.Helper()
	opts.Client = client.Options{Gateway: sg.url, Space: "sdk", Token: "human-token"}
	p, err := participant.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	errc := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		errc <- p.Connect(ctx)
	}()
	var c *websocket.Conn
	select {
	case c = <-sg.conn:
	case <-time.After(10 * time.Second):
		t.Fatal("the participant never dialled")
	}
	sg.send(c, protocol.GatewayID, protocol.KindSystemWelcome, nil, nil,
		`{"you":{"id":"human","capabilities":[{"kind":"*"}]},"participants":[{"id":"calc","capabilities":[{"kind":"*"}]}]}`)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return p, c
}

// send writes one envelope to the participant.
func (sg *scriptedGateway) send(c *websocket.Conn, from, kind string, to, corr []string, payload string) {
	sg.t.Helper()
	env := &protocol.Envelope{
		Protocol: protocol.Version, ID: protocol.NewID(), TS: protocol.FormatTime(time.Now()),
		From: from, To: to, Kind: kind, CorrelationID: corr, Payload: json.RawMessage(payload),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, env.AppendJSON(nil)); err != nil {
		sg.t.Fatalf("scripted gateway: send %s: %v", kind, err)
	}
}

// next returns the next envelope of kind the participant sent.
func (sg *scriptedGateway) next(kind string) *protocol.Envelope {
	sg.t.Helper()
	return testutil.ReceiveWhere(sg.t, sg.in, 10*time.Second, "the participant's "+kind, func(env *protocol.Envelope) bool { return env.Kind == kind })
}

// barrier sends a chat from calc and waits until p's handlers have seen it:
// everything sent before it has been dispatched by then, the client
// dispatching in order.
func (sg *scriptedGateway) barrier(p *participant.Participant, c *websocket.Conn) {
	sg.t.Helper()
	text := "barrier " + protocol.NewID()
	seen := make(chan struct{})
	remove := p.Client().OnKind(protocol.KindChat, func(env *protocol.Envelope) {
		var ch protocol.Chat
		if env.DecodePayload(&ch) == nil && ch.Text == text {
			close(seen)
		}
	})
	defer remove()
	sg.send(c, "calc", protocol.KindChat, nil, nil, `{"text":"`+text+`"}`)
	select {
	case <-seen:
	case <-time.After(10 * time.Second):
		sg.t.Fatal("the barrier chat never arrived")
	}
}

// TestOnlyTheGatewaySpeaksForTheGateway: a system/error, a presence leave
// or a stream/open that a participant sends (which our gateway never
// relays, but another might) does not pass for the gateway's: it neither
// fails a request nor answers a stream request; the gateway's own do.
func TestOnlyTheGatewaySpeaksForTheGateway(t *testing.T) {
	sg := startScripted(t)
	p, c := sg.join(participant.Options{})
	errs := make(chan error, 16)
	p.Client().OnError(func(err error) { errs <- err })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	res := mcpRequestAsync(ctx, p, "calc", mcpCall("add", map[string]any{"a": 1, "b": 2}))
	req := sg.next(protocol.KindMCPRequest)
	sg.send(c, "calc", protocol.KindSystemError, []string{"human"}, []string{req.ID}, `{"error":"capability_violation","message":"forged"}`)
	sg.send(c, "mallory", protocol.KindSystemPresence, nil, nil, `{"event":"leave","participant":{"id":"calc"}}`)
	sg.send(c, protocol.LegacyGatewayID, protocol.KindSystemPresence, nil, nil, `{"event":"leave","participant":{"id":"calc"}}`)

	type streamOutcome struct {
		id  string
		err error
	}
	streamRes := make(chan streamOutcome, 1)
	go func() {
		id, err := p.RequestStream(ctx, protocol.StreamRequest{Direction: "upload"})
		streamRes <- streamOutcome{id, err}
	}()
	sreq := sg.next(protocol.KindStreamRequest)
	sg.send(c, "calc", protocol.KindStreamOpen, []string{"human"}, []string{sreq.ID}, `{"stream_id":"s-forged","owner":"human","authorized_writers":["human","calc"]}`)
	sg.barrier(p, c)

	select {
	case o := <-res:
		t.Fatalf("the request ended on forged gateway envelopes: %v", o.err)
	default:
	}
	select {
	case o := <-streamRes:
		t.Fatalf("RequestStream answered by a participant's stream/open: %q %v", o.id, o.err)
	default:
	}
	var dropped int
	for len(errs) > 0 {
		if err := <-errs; errors.Is(err, client.ErrNotFromGateway) {
			dropped++
		}
	}
	if dropped != 3 {
		t.Errorf("%d forged gateway-only envelopes reported, want 3", dropped)
	}
	// A participant's stream/open announces a stream of its own, whatever
	// it claims.
	found := false
	for _, s := range p.ActiveStreams() {
		if s.StreamID == "s-forged" {
			found = true
			if s.Owner != "calc" || len(s.AuthorizedWriters) != 1 || s.AuthorizedWriters[0] != "calc" {
				t.Errorf("participant-announced stream recorded as %+v", s)
			}
		}
	}
	if !found {
		t.Error("the participant's stream/open was not recorded as its own stream")
	}

	// The gateway's own answers count.
	sg.send(c, protocol.LegacyGatewayID, protocol.KindStreamOpen, []string{"human"}, []string{sreq.ID}, `{"stream_id":"s-1","owner":"human","authorized_writers":["human"]}`)
	select {
	case o := <-streamRes:
		if o.err != nil || o.id != "s-1" {
			t.Errorf("RequestStream = %q, %v; want s-1", o.id, o.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RequestStream ignored the gateway's stream/open")
	}
	sg.send(c, protocol.GatewayID, protocol.KindSystemError, []string{"human"}, []string{req.ID}, `{"error":"capability_violation","message":"real"}`)
	o := mcpOutcomeOf(t, res)
	var ge *participant.GatewayError
	if !errors.As(o.err, &ge) || ge.Message != "real" {
		t.Errorf("request = %v, want the gateway's refusal", o.err)
	}
}

// TestTargetLeftOnlyOnTheGatewaysWord: only the gateway's
// presence leave fails the request, and it does so at once.
func TestTargetLeftOnlyOnTheGatewaysWord(t *testing.T) {
	sg := startScripted(t)
	p, c := sg.join(participant.Options{RequestTimeout: time.Minute})
	res := mcpRequestAsync(context.Background(), p, "calc", mcpCall("add", map[string]any{"a": 1, "b": 2}))
	sg.next(protocol.KindMCPRequest)
	sg.send(c, "calc", protocol.KindSystemPresence, nil, nil, `{"event":"leave","participant":{"id":"calc"}}`)
	sg.barrier(p, c)
	select {
	case o := <-res:
		t.Fatalf("a participant's presence leave ended the request: %v", o.err)
	default:
	}
	start := time.Now()
	sg.send(c, protocol.GatewayID, protocol.KindSystemPresence, nil, nil, `{"event":"leave","participant":{"id":"calc"}}`)
	o := mcpOutcomeOf(t, res)
	if !errors.Is(o.err, participant.ErrTargetLeft) {
		t.Fatalf("request = %v, want ErrTargetLeft", o.err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the request took %v to fail after the leave", d)
	}
}

// TestTargetLeftFailsTheRequest: through a real gateway, a request whose
// target disconnects before answering fails at once with ErrTargetLeft,
// long before its timeout; so does a proposal, which is then withdrawn.
func TestTargetLeftFailsTheRequest(t *testing.T) {
	g := startSpace(t, "", gateway.Options{})
	calc := mcpJoin(t, g, "calc", participant.Options{})
	started := make(chan struct{}, 1)
	if err := calc.RegisterTool(waitTool(started)); err != nil {
		t.Fatal(err)
	}
	human := mcpJoin(t, g, "human", participant.Options{})
	agent := mcpJoin(t, g, "agent", participant.Options{})
	proposals := mcpProposals(human)
	withdrawals := mcpWatch(human, protocol.KindMCPWithdraw)
	const timeout = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()

	res := mcpRequestAsync(ctx, human, "calc", mcpCall("wait", nil))
	<-started
	proposed := mcpRequestAsync(ctx, agent, "calc", mcpCall("wait", nil))
	pr := mcpNextProposal(t, proposals)
	start := time.Now()
	if err := calc.Close(); err != nil {
		t.Fatal(err)
	}
	for _, o := range []mcpOutcome{mcpOutcomeOf(t, res), mcpOutcomeOf(t, proposed)} {
		if !errors.Is(o.err, participant.ErrTargetLeft) {
			t.Errorf("err = %v, want ErrTargetLeft", o.err)
		}
	}
	if d := time.Since(start); d > timeout/6 {
		t.Errorf("the requests took %v to fail after their target left", d)
	}
	mcpWait(t, withdrawals, "the proposal's withdrawal", func(e *protocol.Envelope) bool { return e.CorrelatesWith(pr.ID()) })
	if st := pr.Status(); st.Settlement != participant.Withdrawn || st.By != "agent" {
		t.Errorf("proposal status after its target left: %+v", st)
	}
}
