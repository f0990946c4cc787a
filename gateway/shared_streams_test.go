package gateway_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
	"github.com/mew-protocol/mew/internal/testutil"
)

// grantStreamKinds gives the participants, connected on other nodes than
// the human's, the stream kinds, and waits until each holds them where it
// is connected.
func grantStreamKinds(t *testing.T, human *testutil.Peer, to map[string]*testutil.Peer) {
	t.Helper()
	for name, p := range to {
		human.SendText(`{"id":"gs-` + name + `","kind":"capability/grant","payload":{"recipient":"` + name + `","capabilities":[{"kind":"stream/*"}]}}`)
		p.ExpectFunc("capability/grant", func(m testutil.Msg) bool { return m.ID() == "gs-"+name })
	}
}

// A stream opened on node 1 (A) by the human, with a writer on node 2 (B)
// and its target on node 3 (C), along with a participant on C that is no
// target: frames go where one gateway sends them, refusals are those of
// one gateway, a grant, revoke or transfer made on one node is in force on
// the others before the frames that follow it, and a close on A ends the
// stream everywhere.
func TestClusterStreams(t *testing.T) { onBackends(t, 3, testClusterStreams) }

func testClusterStreams(t *testing.T, gs []*testutil.Gateway) {
	a, b, c := gs[0], gs[1], gs[2]
	human, _ := testutil.Join(t, a.WSURL, "human-token")
	bob, _ := testutil.Join(t, b.WSURL, "bob-token")
	carol, _ := testutil.Join(t, c.WSURL, "carol-token")
	agent, _ := testutil.Join(t, c.WSURL, "agent-token")
	expectJoins(human, "bob", "carol", "agent")
	grantStreamKinds(t, human, map[string]*testutil.Peer{"bob": bob, "agent": agent})

	// Open on A, targeted at carol on C. The payload's owner and writer
	// members change nothing, as on one node. Every node shows the open,
	// then the request.
	id := openStream(t, human, "req-1",
		`{"direction":"upload","description":"across","target":["carol"],"owner":"bob","authorized_writers":["bob"],"participantId":"bob"}`,
		bob, carol, agent)
	if id != "stream-1" {
		t.Fatalf("first stream of the cluster is %s", id)
	}

	// Not a writer: refused on B and C, delivered nowhere.
	refusedFrame(t, bob, id, "#"+id+"#early", carol)
	refusedFrame(t, agent, id, "#"+id+"#sneaky", carol)
	// A participant that does not own the stream cannot close it or change
	// its writers, on whichever node.
	for _, env := range []string{
		`{"id":"x1","kind":"stream/close","payload":{"stream_id":"` + id + `"}}`,
		`{"id":"x2","kind":"stream/grant-write","payload":{"stream_id":"` + id + `","participant_id":"bob"}}`,
		`{"id":"x3","kind":"stream/transfer-ownership","payload":{"stream_id":"` + id + `","new_owner":"bob"}}`,
	} {
		if e := outcome(t, bob, env[7:9], env); e == nil || e["error"] != gateway.ErrorNotStreamOwner {
			t.Fatalf("bob on node 2 %s: %v, want %s", env, e, gateway.ErrorNotStreamOwner)
		}
	}

	// The grant on A is in force on B when bob reads it: his frames go to
	// carol on C, in order, and to no one else.
	human.SendText(`{"kind":"stream/grant-write","payload":{"stream_id":"` + id + `","participant_id":"bob"}}`)
	bob.Expect("stream/write-granted")
	const n = 20
	for i := range n {
		send(t, bob, fmt.Sprintf("#%s#b%d", id, i))
	}
	for i := range n {
		expectFrame(t, carol, fmt.Sprintf("#%s#b%d", id, i))
	}
	noFrame(t, agent, "agent (on carol's node, not a target)")
	noFrame(t, human, "the owner (not a target)")
	noFrame(t, bob, "the writer (not a target)")

	// Frames from A to C, one at a time: the cross-node frame latency.
	var lag []time.Duration
	for i := range 200 {
		start := time.Now()
		send(t, human, fmt.Sprintf("#%s#l%d", id, i))
		expectFrame(t, carol, fmt.Sprintf("#%s#l%d", id, i))
		lag = append(lag, time.Since(start))
	}
	t.Logf("frame written on node 1 → delivered on node 3 (WebSocket to WebSocket): p50 %v p99 %v max %v", pct(lag, 50), pct(lag, 99), pct(lag, 100))

	// The revoke on A is in force on B when bob reads it.
	human.SendText(`{"kind":"stream/revoke-write","payload":{"stream_id":"` + id + `","participant_id":"bob"}}`)
	bob.Expect("stream/write-revoked")
	refusedFrame(t, bob, id, "#"+id+"#late", carol)

	// A second stream, for everyone, whose ownership goes to bob on B; bob
	// grants the agent on C, whose frames then reach everyone, the old
	// owner on A included. The old owner may no longer close it.
	id2 := openStream(t, human, "req-2", `{"direction":"upload"}`, bob, carol, agent)
	if id2 != "stream-2" {
		t.Fatalf("second stream is %s", id2)
	}
	human.SendText(`{"kind":"stream/transfer-ownership","payload":{"stream_id":"` + id2 + `","new_owner":"bob"}}`)
	bob.ExpectFunc("stream/ownership-transferred", func(m testutil.Msg) bool { return m.Payload()["new_owner"] == "bob" })
	bob.SendText(`{"kind":"stream/grant-write","payload":{"stream_id":"` + id2 + `","participant_id":"agent"}}`)
	agent.Expect("stream/write-granted")
	send(t, agent, "#"+id2+"#from-c")
	for _, p := range []*testutil.Peer{human, bob, carol, agent} {
		expectFrame(t, p, "#"+id2+"#from-c")
	}
	refused(t, human, "x4", `{"id":"x4","kind":"stream/close","payload":{"stream_id":"`+id2+`"}}`, gateway.ErrorNotStreamOwner, "the old owner closed the transferred stream")
	refusedFrame(t, human, id2, "#"+id2+"#old-owner", carol) // the old owner is no writer any more

	// Close on A: every node ends stream-1 (refused on B and C after the
	// close reached them); a welcome on C lists only stream-2, as bob and
	// the agent left it.
	human.SendText(`{"kind":"stream/close","payload":{"stream_id":"` + id + `"}}`)
	for _, p := range []*testutil.Peer{bob, carol, agent} {
		p.ExpectFunc("stream/close", func(m testutil.Msg) bool { return m.Payload()["stream_id"] == id })
	}
	refusedFrame(t, agent, id, "#"+id+"#after-close", carol)
	carol.Conn.CloseNow()
	human.ExpectFunc("system/presence", presence("leave", "carol"))
	carol, w := testutil.Join(t, c.WSURL, "carol-token")
	active, _ := w.Payload()["active_streams"].([]any)
	if len(active) != 1 {
		t.Fatalf("welcome on node 3 lists streams %v, want only %s", active, id2)
	}
	st := active[0].(map[string]any)
	if st["stream_id"] != id2 || st["owner"] != "bob" || !slices.Equal(anyStrings(st["authorized_writers"]), []string{"bob", "agent"}) {
		t.Fatalf("welcome on node 3 lists %v, want %s owned by bob, writers bob and agent", st, id2)
	}

	// A writer's connection ends on C: it is no writer on the other nodes
	// either (no envelope says so: carol's welcomes on B are polled).
	agent.Conn.CloseNow()
	carol.Conn.CloseNow()
	left := map[string]bool{}
	// Two leaves from node C, through three NATS servers: allow a loaded
	// machine more than the usual 5 s.
	human.Within(15*time.Second, "agent and carol leaving", func(m testutil.Msg) bool {
		if m.Kind() == "system/presence" && m.Payload()["event"] == "leave" {
			left[presenceOf(m)] = true
		}
		return left["agent"] && left["carol"]
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		carol, w = testutil.Join(t, b.WSURL, "carol-token")
		active, _ := w.Payload()["active_streams"].([]any)
		if len(active) != 1 {
			t.Fatalf("welcome on node 2 lists streams %v, want only %s", active, id2)
		}
		writers := anyStrings(active[0].(map[string]any)["authorized_writers"])
		if slices.Equal(writers, []string{"bob"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 2 still lists writers %v after the agent left node 3", writers)
		}
		carol.Conn.CloseNow()
		human.ExpectFunc("system/presence", presence("leave", "carol"))
	}
	agent, _ = testutil.Join(t, c.WSURL, "agent-token")
	refusedFrame(t, agent, id2, "#"+id2+"#gone", carol)

	// The owner's connection ends on B: its stream closes everywhere.
	bob.Conn.CloseNow()
	for _, p := range []*testutil.Peer{human, carol, agent} {
		p.ExpectFunc("stream/close", func(m testutil.Msg) bool {
			return m.Payload()["stream_id"] == id2 && m.Payload()["reason"] == gateway.StreamCloseOwnerLeft
		})
	}
	// Once: its node's record and its presence leaving the other nodes
	// both end it there, whichever comes first; the second does nothing.
	for _, p := range []*testutil.Peer{human, carol, agent} {
		if m, ok := p.Quiet(quiet, func(m testutil.Msg) bool { return m.Kind() != "stream/close" }); !ok {
			t.Fatalf("a second stream/close: %s", m.Raw)
		}
	}
	refusedFrame(t, agent, id2, "#"+id2+"#orphan", human)

	// Frames written the moment a stream opens reach the other nodes
	// after its open, however the log and the Broker race: a node holds
	// them until it has applied the open.
	for i := range 10 {
		req := fmt.Sprintf("q%d", i)
		request(human, req, `{"direction":"upload","target":["carol"]}`)
		open := human.ExpectFunc("stream/open", func(m testutil.Msg) bool { return correlatedWith(m, req) })
		sid, _ := open.Payload()["stream_id"].(string)
		send(t, human, "#"+sid+"#first")
		carol.ExpectFunc("stream/open", func(m testutil.Msg) bool { return correlatedWith(m, req) })
		expectFrame(t, carol, "#"+sid+"#first")
	}
}

func anyStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// A node started after streams were opened and closed knows the open
// ones from its first welcome, and delivers their frames.
func TestClusterStreamsLateNode(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			newNode := nodeMaker(t, b)
			start := func(id string) *testutil.Gateway {
				return testutil.StartGateway(t, clusterSpace, gateway.Options{Logger: slog.New(slog.NewTextHandler(tlog{t}, nil)), Cluster: gateway.ClusterOptions{Node: newNode(id), Name: "test"}})
			}
			a := start("n1")
			human, _ := testutil.Join(t, a.WSURL, "human-token")
			openStream(t, human, "r1", `{"direction":"upload"}`)
			id := openStream(t, human, "r2", `{"direction":"download","description":"before n2","metadata":{"k":1}}`)
			human.SendText(`{"kind":"stream/close","payload":{"stream_id":"stream-1"}}`)
			human.ExpectFunc("stream/close", func(m testutil.Msg) bool { return m.Payload()["stream_id"] == "stream-1" })
			b := start("n2")
			carol, w := testutil.Join(t, b.WSURL, "carol-token")
			active, _ := w.Payload()["active_streams"].([]any)
			if len(active) != 1 {
				t.Fatalf("the late node's welcome lists %v, want %s only", active, id)
			}
			st := active[0].(map[string]any)
			if st["stream_id"] != id || st["owner"] != "human" || st["description"] != "before n2" ||
				!slices.Equal(anyStrings(st["authorized_writers"]), []string{"human"}) {
				t.Fatalf("the late node lists %v", st)
			}
			human.ExpectFunc("system/presence", presence("join", "carol"))
			human.SendText(`{"kind":"stream/grant-write","payload":{"stream_id":"` + id + `","participant_id":"carol"}}`)
			carol.Expect("stream/write-granted")
			send(t, carol, "#"+id+"#from-the-late-node")
			expectFrame(t, human, "#"+id+"#from-the-late-node")
			expectFrame(t, carol, "#"+id+"#from-the-late-node") // the writer's own, as on one node
			send(t, human, "#"+id+"#to-the-late-node")
			expectFrame(t, carol, "#"+id+"#to-the-late-node")
			if id3 := openStream(t, human, "r3", `{"direction":"upload"}`, carol); id3 != "stream-3" {
				t.Fatalf("third stream of the cluster is %s", id3)
			}
		})
	}
}

// nodeMaker returns a maker of nodes of one fresh cluster on b, for tests
// that start a node later (startClusterOn starts its nodes all at once).
func nodeMaker(t *testing.T, b backend) func(id string) cluster.Node {
	t.Helper()
	f := newFabric(t, b)
	i := 0
	return func(id string) cluster.Node {
		i++
		return f.node(t, i-1, id, nil)
	}
}

// What reaches a node on the fabric without coming from a correct node:
// a frame for a stream that does not exist, a frame claiming a log record
// that does not exist (a future Seq), malformed frame messages, a garbled
// stream change in the log. None is delivered, none stops the stream's
// real frames, none panics.
func TestClusterStreamsHostile(t *testing.T) {
	c := startClusterOn(t, 2, onNATS)
	gs, ns := c.gs, c.ns
	human, _ := testutil.Join(t, gs[0].WSURL, "human-token")
	carol, _ := testutil.Join(t, gs[1].WSURL, "carol-token")
	human.ExpectFunc("system/presence", presence("join", "carol"))
	id := openStream(t, human, "r1", `{"direction":"upload"}`, carol)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	evil, err := natscluster.New(ctx, natscluster.Options{NodeID: "evil", Cluster: "test", URL: ns.ClientURL(), PresenceTTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer evil.Close()
	frameMsg := func(seq uint64, writer, frame string) []byte {
		b := []byte{0}
		b = binary.AppendUvarint(b, seq)
		b = binary.AppendUvarint(b, uint64(len(writer)))
		return append(append(b, writer...), frame...)
	}
	for _, msg := range [][]byte{
		frameMsg(0, "human", "#stream-999#no such stream"),
		frameMsg(1<<40, "human", "#"+id+"#a record from the future"),
		frameMsg(0, "human", "no frame at all"),
		{0, 0xff},                // a truncated Seq
		{0, 1, 200, 'h'},         // a writer longer than the message
		frameMsg(0, "human", ""), // an empty frame
	} {
		if err := evil.Broker().Publish(ctx, "shared", msg); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range []string{
		`{"stream_change":"open","origin":"evil","stream":{"id":"stream-50"}}`,                  // no owner
		`{"stream_change":"close","origin":"evil","stream":{"id":"a/b"}}`,                       // a bad id
		`{"stream_change":"close","origin":"evil","stream":{"id":"` + id + `"},"announce":"!"}`, // not base64
		`{"stream_change":"writers","origin":"evil"`,
	} {
		if _, err := evil.Log().Append(ctx, "shared", []byte(rec)); err != nil {
			t.Fatal(err)
		}
	}
	// The stream's real frames still go, first (expectFrame fails on any
	// other frame); the bogus ones never do.
	send(t, human, "#"+id+"#real")
	expectFrame(t, carol, "#"+id+"#real")
	// The frame from the future is dropped once it waited its limit.
	if m, ok := carol.Quiet(6*time.Second, func(m testutil.Msg) bool { return m.Env != nil }); !ok {
		t.Fatalf("carol received %q", m.Raw)
	}
}

// A node lost without closing (its cluster node gone, as when the process
// is killed): its participants' presence leaves the others, which close the
// streams they owned, announced as owner_left, as one gateway does when an
// owner's connection ends.
func TestClusterStreamsNodeLost(t *testing.T) {
	for _, b := range backends {
		t.Run(string(b), func(t *testing.T) {
			newNode := nodeMaker(t, b)
			logger := slog.New(slog.NewTextHandler(tlog{t}, nil))
			lost := newNode("n1")
			a := testutil.StartGateway(t, clusterSpace, gateway.Options{Logger: logger, Cluster: gateway.ClusterOptions{Node: lost, Name: "test"}})
			b := testutil.StartGateway(t, clusterSpace, gateway.Options{Logger: logger, Cluster: gateway.ClusterOptions{Node: newNode("n2"), Name: "test"}})
			carol, _ := testutil.Join(t, b.WSURL, "carol-token")
			human, _ := testutil.Join(t, a.WSURL, "human-token")
			carol.ExpectFunc("system/presence", presence("join", "human"))
			id := openStream(t, human, "r1", `{"direction":"upload"}`, carol)

			_ = lost.Close()
			m := carol.ExpectFunc("stream/close", func(m testutil.Msg) bool { return m.Payload()["stream_id"] == id })
			if m.Payload()["reason"] != gateway.StreamCloseOwnerLeft {
				t.Fatalf("stream/close on node 2: %s", m.Raw)
			}
			carol.ExpectFunc("system/presence", presence("leave", "human"))
			_, w := testutil.Join(t, b.WSURL, "bob-token")
			if active, _ := w.Payload()["active_streams"].([]any); len(active) != 0 {
				t.Fatalf("node 2 still lists %v", active)
			}
		})
	}
}
