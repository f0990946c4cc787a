package gateway_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// streamSpace gives everyone the stream kinds, and has an output_log
// participant to check that frames stay out of its file.
const streamSpace = `
space:
  id: streams
participants:
  alice:
    tokens: [alice-token]
    capabilities: [{kind: "stream/*"}, {kind: chat}]
  bob:
    tokens: [bob-token]
    capabilities: [{kind: "stream/*"}, {kind: chat}]
  carol:
    tokens: [carol-token]
    capabilities: [{kind: "stream/*"}, {kind: chat}]
  dave:
    tokens: [dave-token]
    capabilities: [{kind: "stream/*"}, {kind: chat}]
  watcher:
    tokens: [watcher-token]
    output_log: ./logs/watcher.jsonl
    auto_connect: true
    capabilities: [{kind: chat}]
`

// quiet is how long a peer must stay silent to count as not receiving.
const quiet = 150 * time.Millisecond

func startStreams(t *testing.T, opts gateway.Options) *testutil.Gateway {
	t.Helper()
	return testutil.StartGateway(t, streamSpace, opts)
}

// joinAll joins the participants with the given tokens (name-token) in
// order, and waits until each has seen the later ones join.
func joinAll(t *testing.T, g *testutil.Gateway, names ...string) []*testutil.Peer {
	t.Helper()
	peers := make([]*testutil.Peer, len(names))
	for i, n := range names {
		peers[i], _ = testutil.Join(t, g.WSURL, n+"-token")
		for _, p := range peers[:i] {
			p.ExpectFunc("system/presence", func(m testutil.Msg) bool {
				return presenceOf(m) == n
			})
		}
	}
	return peers
}

func presenceOf(m testutil.Msg) string {
	p, _ := m.Payload()["participant"].(map[string]any)
	id, _ := p["id"].(string)
	return id
}

// request sends a stream/request with the given id and payload.
func request(p *testutil.Peer, id, payload string) {
	p.SendText(`{"id":"` + id + `","kind":"stream/request","payload":` + payload + `}`)
}

// correlatedWith reports whether m's correlation_id is exactly [id].
func correlatedWith(m testutil.Msg, id string) bool {
	c, _ := m.Env["correlation_id"].([]any)
	return len(c) == 1 && c[0] == id
}

// openStream has owner request a stream and returns its id, after the owner
// and every peer in seen have received the stream/open and the relayed
// request.
func openStream(t *testing.T, owner *testutil.Peer, reqID, payload string, seen ...*testutil.Peer) string {
	t.Helper()
	request(owner, reqID, payload)
	open := owner.ExpectFunc("stream/open", func(m testutil.Msg) bool { return correlatedWith(m, reqID) })
	id, _ := open.Payload()["stream_id"].(string)
	if id == "" {
		t.Fatalf("stream/open without stream_id: %s", open.Raw)
	}
	// Everyone gets the open, then the request itself.
	owner.ExpectFunc("stream/request", func(m testutil.Msg) bool { return m.ID() == reqID })
	for _, p := range seen {
		p.ExpectFunc("stream/open", func(m testutil.Msg) bool { return correlatedWith(m, reqID) })
		p.ExpectFunc("stream/request", func(m testutil.Msg) bool { return m.ID() == reqID })
	}
	return id
}

// send writes a frame as a text message.
func send(t *testing.T, p *testutil.Peer, frame string) {
	t.Helper()
	if err := p.Write(websocket.MessageText, []byte(frame)); err != nil {
		t.Fatalf("write frame: %v", err)
	}
}

// expectFrame skips envelopes until a frame arrives, and checks that it is
// want, as a binary message.
func expectFrame(t *testing.T, p *testutil.Peer, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m, err := p.Read(time.Until(deadline))
		if err != nil {
			t.Fatalf("waiting for frame %q: %v", want, err)
		}
		if m.Env != nil {
			continue
		}
		if string(m.Raw) != want || !m.Binary {
			t.Fatalf("frame %q (binary %v), want %q as binary", m.Raw, m.Binary, want)
		}
		return
	}
}

// noFrame checks that no frame reaches p for a while; envelopes are skipped.
func noFrame(t *testing.T, p *testutil.Peer, who string) {
	t.Helper()
	if m, ok := p.Quiet(quiet, func(m testutil.Msg) bool { return m.Env != nil }); !ok {
		t.Fatalf("%s received frame %q", who, m.Raw)
	}
}

// expectError waits for a system/error with the given code and returns its
// payload.
func expectError(t *testing.T, p *testutil.Peer, code string) map[string]any {
	t.Helper()
	m := p.ExpectFunc("system/error", func(m testutil.Msg) bool { return m.Payload()["error"] == code })
	return m.Payload()
}

// refusedFrame sends a frame that must be refused with
// unauthorized_stream_write naming stream id, and not delivered to others.
func refusedFrame(t *testing.T, from *testutil.Peer, id, frame string, others ...*testutil.Peer) {
	t.Helper()
	send(t, from, frame)
	e := expectError(t, from, gateway.ErrorUnauthorizedStream)
	if e["stream_id"] != id {
		t.Fatalf("error stream_id = %v, want %q: %v", e["stream_id"], id, e)
	}
	for _, p := range others {
		noFrame(t, p, "another participant")
	}
}

func TestStreamOpenVisibleToAll(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	ps := joinAll(t, g, "alice", "bob", "carol")
	alice, bob, carol := ps[0], ps[1], ps[2]

	request(alice, "req-1", `{"direction":"upload","description":"log"}`)
	var openID string
	for _, p := range ps {
		open := p.Expect("stream/open")
		if openID == "" {
			openID = open.ID()
		}
		if open.ID() != openID || open.From() != "system:gateway" || !correlatedWith(open, "req-1") {
			t.Fatalf("stream/open: %s", open.Raw)
		}
		if to, _ := open.Env["to"].([]any); len(to) != 1 || to[0] != "alice" {
			t.Fatalf("stream/open to = %v", open.Env["to"])
		}
		want := map[string]any{
			"stream_id": "stream-1", "encoding": "text", "owner": "alice", "authorized_writers": []any{"alice"},
		}
		if d := cmp.Diff(want, open.Payload()); d != "" {
			t.Fatalf("stream/open payload (-want +got):\n%s", d)
		}
		// Then the request itself, relayed as usual.
		next := p.Next()
		if next.Kind() != "stream/request" || next.ID() != "req-1" || next.From() != "alice" {
			t.Fatalf("after the open: %s", next.Raw)
		}
	}
	// Ids are never reused: the next stream is stream-2, whoever asks.
	if id := openStream(t, bob, "req-2", `{"direction":"download"}`, alice, carol); id != "stream-2" {
		t.Fatalf("second stream id = %s", id)
	}
	// The open reaches an output_log participant like any envelope.
	waitFile(t, g.Config.Resolve("logs/watcher.jsonl"), `"kind":"stream/open"`)
}

func TestStreamFrames(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	ps := joinAll(t, g, "alice", "bob", "carol")
	alice, bob, carol := ps[0], ps[1], ps[2]
	id := openStream(t, alice, "r1", `{"direction":"upload"}`, bob, carol)

	// The owner's frames reach everyone, the writer included, as binary
	// messages, byte for byte; a frame sent as binary too.
	send(t, alice, "#"+id+"#hello #1")
	for _, p := range ps {
		expectFrame(t, p, "#"+id+"#hello #1")
	}
	bin := "#" + id + "#\x00\xff\xfe raw"
	if err := alice.Write(websocket.MessageBinary, []byte(bin)); err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		expectFrame(t, p, bin)
	}
	send(t, alice, "#"+id+"#")
	for _, p := range ps {
		expectFrame(t, p, "#"+id+"#")
	}

	// A participant that is not a writer, an unknown stream, a malformed id.
	refusedFrame(t, bob, id, "#"+id+"#not yours", alice, carol)
	refusedFrame(t, alice, "stream-99", "#stream-99#nobody", bob, carol)
	refusedFrame(t, alice, "", "##x", bob, carol)

	// Frames stay out of output_log files, which hold envelopes.
	alice.SendText(`{"kind":"chat","payload":{"text":"marker"}}`)
	b := waitFile(t, g.Config.Resolve("logs/watcher.jsonl"), `"text":"marker"`)
	if strings.Contains(string(b), "hello #1") {
		t.Fatalf("a frame reached the output_log file:\n%s", b)
	}
}

func TestStreamTargeted(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	ps := joinAll(t, g, "alice", "bob", "carol")
	alice, bob, carol := ps[0], ps[1], ps[2]

	// Only the target receives the frames, not the writer.
	request(alice, "r1", `{"direction":"upload","target":["bob"]}`)
	open := carol.ExpectFunc("stream/open", func(m testutil.Msg) bool { return correlatedWith(m, "r1") })
	if d := cmp.Diff([]any{"bob"}, open.Payload()["target"]); d != "" {
		t.Fatalf("stream/open target (-want +got):\n%s", d)
	}
	id := open.Payload()["stream_id"].(string)
	alice.Expect("stream/open")
	send(t, alice, "#"+id+"#to bob")
	expectFrame(t, bob, "#"+id+"#to bob")
	noFrame(t, carol, "carol")
	noFrame(t, alice, "the writer")

	// A writer in the target receives its own frames.
	id2 := openStream(t, alice, "r2", `{"direction":"upload","target":["bob","alice"]}`, bob, carol)
	send(t, alice, "#"+id2+"#both")
	expectFrame(t, alice, "#"+id2+"#both")
	expectFrame(t, bob, "#"+id2+"#both")
	noFrame(t, carol, "carol")

	// A target that is not in the space: a configured participant that is
	// not connected, or nobody at all.
	request(alice, "r3", `{"direction":"upload","target":["bob","dave","ghost"]}`)
	m := alice.ExpectFunc("system/error", func(m testutil.Msg) bool { return correlatedWith(m, "r3") })
	if m.Payload()["error"] != "target_not_found" {
		t.Fatalf("error: %s", m.Raw)
	}
	if d := cmp.Diff([]any{"dave", "ghost"}, m.Payload()["targets"]); d != "" {
		t.Fatalf("targets (-want +got):\n%s", d)
	}
	if m, ok := carol.Quiet(quiet, nil); !ok {
		t.Fatalf("a refused request reached carol: %s", m.Raw)
	}
}

func TestStreamAliases(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	// Bob joins under a runtime alias.
	bob := testutil.Dial(t, g.WSURL, "")
	bob.SendText(`{"type":"join","participantId":"bob-cli","space":"streams","token":"bob-token"}`)
	bob.Expect("system/welcome")
	alice.ExpectFunc("system/presence", func(m testutil.Msg) bool { return presenceOf(m) == "bob-cli" })

	// A target by logical name reaches the alias.
	id := openStream(t, alice, "r1", `{"direction":"upload","target":["bob"]}`, bob)
	send(t, alice, "#"+id+"#x")
	expectFrame(t, bob, "#"+id+"#x")

	// Bob owns a stream under its alias and may write by either id; a
	// grant by logical name works for frames sent under the alias.
	id2 := openStream(t, bob, "r2", `{"direction":"upload"}`, alice)
	bob.SendText(`{"kind":"stream/grant-write","payload":{"stream_id":"` + id2 + `","participant_id":"alice"}}`)
	w := alice.Expect("stream/write-granted")
	if d := cmp.Diff([]any{"bob-cli", "alice"}, w.Payload()["authorized_writers"]); d != "" {
		t.Fatalf("writers (-want +got):\n%s", d)
	}
	send(t, alice, "#"+id2+"#y")
	expectFrame(t, bob, "#"+id2+"#y")
	bob.SendText(`{"from":"bob","kind":"stream/close","payload":{"stream_id":"` + id2 + `"}}`)
	alice.ExpectFunc("stream/close", func(m testutil.Msg) bool { return m.Payload()["stream_id"] == id2 })
}

func TestStreamOwnership(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	ps := joinAll(t, g, "alice", "bob", "carol")
	alice, bob, carol := ps[0], ps[1], ps[2]
	id := openStream(t, alice, "r1", `{"direction":"upload"}`, bob, carol)
	allIDs := []any{"watcher", "alice", "bob", "carol"}

	refusedFrame(t, bob, id, "#"+id+"#before", alice, carol)

	// grant-write: announced to everyone, not relayed itself.
	alice.SendText(`{"id":"g1","kind":"stream/grant-write","payload":{"stream_id":"` + id + `","participant_id":"bob","reason":"help"}}`)
	for _, p := range ps {
		m := p.Expect("stream/write-granted")
		want := map[string]any{"stream_id": id, "participant_id": "bob", "authorized_writers": []any{"alice", "bob"}, "reason": "help"}
		if d := cmp.Diff(want, m.Payload()); d != "" {
			t.Fatalf("write-granted (-want +got):\n%s", d)
		}
		if m.From() != "system:gateway" || !correlatedWith(m, "g1") {
			t.Fatalf("write-granted: %s", m.Raw)
		}
		if d := cmp.Diff(allIDs, m.Env["to"]); d != "" {
			t.Fatalf("write-granted to (-want +got):\n%s", d)
		}
	}
	send(t, bob, "#"+id+"#from bob")
	for _, p := range ps {
		expectFrame(t, p, "#"+id+"#from bob")
	}
	// Idempotent.
	alice.SendText(`{"kind":"stream/grant-write","payload":{"stream_id":"` + id + `","participant_id":"bob"}}`)
	if m := carol.Expect("stream/write-granted"); len(m.Payload()["authorized_writers"].([]any)) != 2 {
		t.Fatalf("second grant: %s", m.Raw)
	}

	// revoke-write.
	alice.SendText(`{"id":"v1","kind":"stream/revoke-write","payload":{"stream_id":"` + id + `","participant_id":"bob"}}`)
	for _, p := range ps {
		m := p.Expect("stream/write-revoked")
		want := map[string]any{"stream_id": id, "participant_id": "bob", "authorized_writers": []any{"alice"}}
		if d := cmp.Diff(want, m.Payload()); d != "" || !correlatedWith(m, "v1") {
			t.Fatalf("write-revoked (-want +got):\n%s\n%s", d, m.Raw)
		}
	}
	refusedFrame(t, bob, id, "#"+id+"#after revoke", alice, carol)

	// transfer-ownership: carol, a writer, becomes the owner; alice is no
	// longer a writer.
	alice.SendText(`{"kind":"stream/grant-write","payload":{"stream_id":"` + id + `","participant_id":"carol"}}`)
	bob.Expect("stream/write-granted")
	alice.SendText(`{"id":"t1","kind":"stream/transfer-ownership","payload":{"stream_id":"` + id + `","new_owner":"bob","reason":"leaving"}}`)
	for _, p := range ps {
		m := p.Expect("stream/ownership-transferred")
		want := map[string]any{
			"stream_id": id, "previous_owner": "alice", "new_owner": "bob",
			"authorized_writers": []any{"carol", "bob"}, "reason": "leaving",
		}
		if d := cmp.Diff(want, m.Payload()); d != "" || !correlatedWith(m, "t1") {
			t.Fatalf("ownership-transferred (-want +got):\n%s\n%s", d, m.Raw)
		}
	}
	refusedFrame(t, alice, id, "#"+id+"#old owner", bob, carol)
	send(t, bob, "#"+id+"#new owner")
	for _, p := range ps {
		expectFrame(t, p, "#"+id+"#new owner")
	}
	// The old owner has no say any more; the new one has.
	alice.SendText(`{"kind":"stream/grant-write","payload":{"stream_id":"` + id + `","participant_id":"alice"}}`)
	if e := expectError(t, alice, gateway.ErrorNotStreamOwner); e["stream_id"] != id {
		t.Fatalf("error: %v", e)
	}
	bob.SendText(`{"kind":"stream/revoke-write","payload":{"stream_id":"` + id + `","participant_id":"carol"}}`)
	if m := alice.Expect("stream/write-revoked"); cmp.Diff([]any{"bob"}, m.Payload()["authorized_writers"]) != "" {
		t.Fatalf("revoke by the new owner: %s", m.Raw)
	}

	// None of the requests was relayed.
	carol.SendText(`{"kind":"chat","payload":{"text":"end"}}`)
	for {
		m := carol.Next()
		if strings.HasPrefix(m.Kind(), "stream/grant") || strings.HasPrefix(m.Kind(), "stream/revoke") || m.Kind() == "stream/transfer-ownership" {
			t.Fatalf("request relayed: %s", m.Raw)
		}
		if m.Kind() == "chat" {
			break
		}
	}
}

func TestStreamOwnershipRefusals(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	ps := joinAll(t, g, "alice", "bob")
	alice, bob := ps[0], ps[1]
	id := openStream(t, alice, "r1", `{"direction":"upload"}`, bob)

	for _, c := range []struct {
		name string
		from *testutil.Peer
		send string
		code string
	}{
		{"grant by non-owner", bob, `{"kind":"stream/grant-write","payload":{"stream_id":"` + id + `","participant_id":"bob"}}`, "not_stream_owner"},
		{"revoke by non-owner", bob, `{"kind":"stream/revoke-write","payload":{"stream_id":"` + id + `","participant_id":"alice"}}`, "not_stream_owner"},
		{"transfer by non-owner", bob, `{"kind":"stream/transfer-ownership","payload":{"stream_id":"` + id + `","new_owner":"bob"}}`, "not_stream_owner"},
		{"unknown stream", alice, `{"kind":"stream/grant-write","payload":{"stream_id":"stream-9","participant_id":"bob"}}`, "stream_not_found"},
		{"grant to nobody", alice, `{"kind":"stream/grant-write","payload":{"stream_id":"` + id + `","participant_id":"ghost"}}`, "participant_not_found"},
		{"grant to a participant not connected", alice, `{"kind":"stream/grant-write","payload":{"stream_id":"` + id + `","participant_id":"dave"}}`, "participant_not_found"},
		{"transfer to nobody", alice, `{"kind":"stream/transfer-ownership","payload":{"stream_id":"` + id + `","new_owner":"ghost"}}`, "participant_not_found"},
		{"revoke nobody", alice, `{"kind":"stream/revoke-write","payload":{"stream_id":"` + id + `","participant_id":"ghost"}}`, "participant_not_found"},
		{"owner revokes itself", alice, `{"kind":"stream/revoke-write","payload":{"stream_id":"` + id + `","participant_id":"alice"}}`, "invalid_operation"},
		{"missing participant", alice, `{"kind":"stream/grant-write","payload":{"stream_id":"` + id + `"}}`, "invalid_envelope"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.from.SendText(strings.Replace(c.send, `{"kind"`, `{"id":"x1","kind"`, 1))
			m := c.from.ExpectFunc("system/error", func(m testutil.Msg) bool { return correlatedWith(m, "x1") })
			if m.Payload()["error"] != c.code {
				t.Fatalf("got %s, want %s", m.Raw, c.code)
			}
		})
	}
	if m, ok := bob.Quiet(quiet, func(m testutil.Msg) bool { return m.Kind() == "system/error" }); !ok {
		t.Fatalf("a refused ownership change reached bob: %s", m.Raw)
	}

	// Over HTTP: the same codes with their statuses, and the reference's
	// answer on success.
	msg := func(kind, payload string) string {
		return `{"kind":"` + kind + `","payload":` + payload + `}`
	}
	for _, c := range []struct {
		who, body string
		status    int
		code      string
	}{
		{"bob", msg("stream/grant-write", `{"stream_id":"`+id+`","participant_id":"bob"}`), 403, "not_stream_owner"},
		{"alice", msg("stream/grant-write", `{"stream_id":"nope","participant_id":"bob"}`), 404, "stream_not_found"},
		{"alice", msg("stream/grant-write", `{"stream_id":"`+id+`","participant_id":"ghost"}`), 404, "participant_not_found"},
		{"alice", msg("stream/revoke-write", `{"stream_id":"`+id+`","participant_id":"alice"}`), 400, "invalid_operation"},
		{"alice", msg("stream/close", `{"stream_id":"nope"}`), 404, "stream_not_found"},
		{"bob", msg("stream/close", `{"stream_id":"`+id+`"}`), 403, "not_stream_owner"},
	} {
		status, body := post(t, g, c.who, c.who+"-token", c.body)
		if status != c.status || body["error"] != c.code {
			t.Errorf("%s %s: %d %v, want %d %s", c.who, c.body, status, body, c.status, c.code)
		}
	}
	status, body := post(t, g, "alice", "alice-token", msg("stream/grant-write", `{"stream_id":"`+id+`","participant_id":"bob"}`))
	granted := bob.Expect("stream/write-granted")
	want := map[string]any{
		"id": granted.ID(), "status": "granted", "stream_id": id, "participant_id": "bob",
		"authorized_writers": []any{"alice", "bob"}, "timestamp": granted.Env["ts"],
	}
	if d := cmp.Diff(want, body); status != 200 || d != "" {
		t.Fatalf("HTTP grant: %d (-want +got):\n%s", status, d)
	}
	status, body = post(t, g, "alice", "alice-token", msg("stream/transfer-ownership", `{"stream_id":"`+id+`","new_owner":"bob"}`))
	if status != 200 || body["status"] != "transferred" || body["previous_owner"] != "alice" || body["new_owner"] != "bob" {
		t.Fatalf("HTTP transfer: %d %v", status, body)
	}
}

func TestStreamClose(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	ps := joinAll(t, g, "alice", "bob")
	alice, bob := ps[0], ps[1]
	id := openStream(t, alice, "r1", `{"direction":"upload"}`, bob)

	// Not by someone else.
	bob.SendText(`{"id":"c0","kind":"stream/close","payload":{"stream_id":"` + id + `"}}`)
	if e := expectError(t, bob, gateway.ErrorNotStreamOwner); e["stream_id"] != id {
		t.Fatalf("error: %v", e)
	}
	send(t, alice, "#"+id+"#still open")
	expectFrame(t, bob, "#"+id+"#still open")

	// By the owner: relayed, and the stream is gone.
	alice.SendText(`{"id":"c1","kind":"stream/close","payload":{"stream_id":"` + id + `","reason":"complete"}}`)
	m := bob.Expect("stream/close")
	if m.ID() != "c1" || m.From() != "alice" || m.Payload()["reason"] != "complete" {
		t.Fatalf("close: %s", m.Raw)
	}
	refusedFrame(t, alice, id, "#"+id+"#after close", bob)
	alice.SendText(`{"id":"c2","kind":"stream/close","payload":{"stream_id":"` + id + `"}}`)
	expectError(t, alice, "stream_not_found")

	// By correlation_id only, naming the stream/open or the stream/request.
	request(alice, "r2", `{"direction":"upload"}`)
	open := alice.ExpectFunc("stream/open", func(m testutil.Msg) bool { return correlatedWith(m, "r2") })
	id2 := open.Payload()["stream_id"].(string)
	id3 := openStream(t, alice, "r3", `{"direction":"upload"}`)
	bob.SendText(`{"kind":"stream/close","correlation_id":["` + open.ID() + `"],"payload":{"reason":"complete"}}`)
	expectError(t, bob, gateway.ErrorNotStreamOwner)
	alice.SendText(`{"id":"c3","kind":"stream/close","correlation_id":["` + open.ID() + `"],"payload":{"reason":"complete"}}`)
	bob.ExpectFunc("stream/close", func(m testutil.Msg) bool { return m.ID() == "c3" })
	alice.SendText(`{"id":"c4","kind":"stream/close","correlation_id":["r3"]}`)
	bob.ExpectFunc("stream/close", func(m testutil.Msg) bool { return m.ID() == "c4" })
	refusedFrame(t, alice, id2, "#"+id2+"#gone", bob)
	refusedFrame(t, alice, id3, "#"+id3+"#gone", bob)

	// A close that names no stream of the gateway (participants may
	// negotiate streams of their own) is relayed as it is.
	bob.SendText(`{"id":"c5","kind":"stream/close","to":["alice"],"correlation_id":["their-open"],"payload":{"reason":"complete"}}`)
	alice.ExpectFunc("stream/close", func(m testutil.Msg) bool { return m.ID() == "c5" })
}

func TestStreamOwnerLeaves(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	ps := joinAll(t, g, "alice", "bob", "carol")
	alice, bob, carol := ps[0], ps[1], ps[2]
	id := openStream(t, alice, "r1", `{"direction":"upload"}`, bob, carol)
	alice.SendText(`{"kind":"stream/grant-write","payload":{"stream_id":"` + id + `","participant_id":"bob"}}`)
	bob.Expect("stream/write-granted")
	// Bob owns a stream carol may write to.
	idB := openStream(t, bob, "rb", `{"direction":"upload"}`, alice, carol)
	bob.SendText(`{"kind":"stream/grant-write","payload":{"stream_id":"` + idB + `","participant_id":"carol"}}`)
	carol.Expect("stream/write-granted")

	_ = alice.Conn.Close(websocket.StatusNormalClosure, "bye")
	for _, p := range []*testutil.Peer{bob, carol} {
		m := p.ExpectFunc("stream/close", func(m testutil.Msg) bool { return m.Payload()["stream_id"] == id })
		want := map[string]any{"stream_id": id, "reason": "owner_left"}
		if d := cmp.Diff(want, m.Payload()); d != "" || m.From() != "system:gateway" {
			t.Fatalf("gateway close (-want +got):\n%s\n%s", d, m.Raw)
		}
		// Then the presence leave.
		if next := p.Next(); next.Kind() != "system/presence" || presenceOf(next) != "alice" {
			t.Fatalf("after the close: %s", next.Raw)
		}
	}
	refusedFrame(t, bob, id, "#"+id+"#orphan", carol)

	// A writer that leaves is no longer a writer, even when it comes back.
	_ = carol.Conn.Close(websocket.StatusNormalClosure, "bye")
	bob.ExpectFunc("system/presence", func(m testutil.Msg) bool { return presenceOf(m) == "carol" })
	carol2, w := testutil.Join(t, g.WSURL, "carol-token")
	streams := w.Payload()["active_streams"].([]any)
	if len(streams) != 1 || cmp.Diff([]any{"bob"}, streams[0].(map[string]any)["authorized_writers"]) != "" {
		t.Fatalf("active_streams = %v", streams)
	}
	refusedFrame(t, carol2, idB, "#"+idB+"#back", bob)
}

func TestStreamWelcome(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	ps := joinAll(t, g, "alice", "bob")
	alice, bob := ps[0], ps[1]

	// Every member of the request is shown to late joiners, custom ones
	// included; what would claim another owner or other writers is not.
	payload := `{"direction":"upload","expected_size_bytes":1024,"description":"Test stream",` +
		`"content_type":"text/plain","format":"utf8","metadata":{"compression":"gzip","n":[1,2]},` +
		`"target":["bob"],"x-custom":"kept","nested":{"a":{"b":true}},` +
		`"participantId":"mallory","authorizedWriters":["mallory"],"owner":"mallory","authorized_writers":["mallory"],"stream_id":"fake"}`
	request(alice, "r1", payload)
	open := alice.Expect("stream/open")
	want := map[string]any{
		"stream_id": "stream-1", "encoding": "text", "owner": "alice",
		"authorized_writers": []any{"alice"}, "target": []any{"bob"},
	}
	if d := cmp.Diff(want, open.Payload()); d != "" {
		t.Fatalf("stream/open with spoofed members (-want +got):\n%s", d)
	}
	// The relayed request is as sent.
	if m := bob.Expect("stream/request"); !strings.Contains(string(m.Raw), `"participantId":"mallory"`) {
		t.Fatalf("request: %s", m.Raw)
	}
	refusedFrame(t, bob, "stream-1", "#stream-1#spoof", alice)
	id2 := openStream(t, bob, "r2", `{"direction":"download"}`, alice)

	carol, w := testutil.Join(t, g.WSURL, "carol-token")
	var got []map[string]any
	b, _ := json.Marshal(w.Payload()["active_streams"])
	if err := json.Unmarshal(b, &got); err != nil || len(got) != 2 {
		t.Fatalf("active_streams = %s", b)
	}
	created, _ := got[0]["created"].(string)
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", created); err != nil {
		t.Fatalf("created %q: %v", created, err)
	}
	wantInfo := map[string]any{
		"stream_id": "stream-1", "owner": "alice", "authorized_writers": []any{"alice"}, "created": created,
		"direction": "upload", "expected_size_bytes": 1024.0, "description": "Test stream",
		"content_type": "text/plain", "format": "utf8",
		"metadata": map[string]any{"compression": "gzip", "n": []any{1.0, 2.0}},
		"target":   []any{"bob"}, "x-custom": "kept", "nested": map[string]any{"a": map[string]any{"b": true}},
	}
	if d := cmp.Diff(wantInfo, got[0]); d != "" {
		t.Fatalf("active_streams[0] (-want +got):\n%s", d)
	}
	if got[1]["stream_id"] != id2 || got[1]["owner"] != "bob" || got[1]["direction"] != "download" {
		t.Fatalf("active_streams[1] = %v", got[1])
	}

	// Closed streams are gone from later welcomes.
	alice.SendText(`{"kind":"stream/close","payload":{"stream_id":"stream-1"}}`)
	carol.ExpectFunc("stream/close", func(m testutil.Msg) bool { return m.Payload()["stream_id"] == "stream-1" })
	bob.SendText(`{"kind":"stream/close","payload":{"stream_id":"` + id2 + `"}}`)
	carol.ExpectFunc("stream/close", func(m testutil.Msg) bool { return m.Payload()["stream_id"] == id2 })
	_, w = testutil.Join(t, g.WSURL, "dave-token")
	if !strings.Contains(string(w.Raw), `"active_streams":[]`) {
		t.Fatalf("welcome after close: %s", w.Raw)
	}
}

func TestStreamHTTP(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")

	// Alice has no connection: she opens a stream over HTTP.
	status, body := post(t, g, "alice", "alice-token", `{"id":"h1","kind":"stream/request","payload":{"direction":"upload","format":"jsonl"}}`)
	open := bob.Expect("stream/open")
	want := map[string]any{"id": open.ID(), "status": "stream_opened", "stream_id": "stream-1", "timestamp": open.Env["ts"]}
	if d := cmp.Diff(want, body); status != 200 || d != "" {
		t.Fatalf("HTTP stream/request: %d (-want +got):\n%s", status, d)
	}
	if !correlatedWith(open, "h1") || open.Payload()["owner"] != "alice" {
		t.Fatalf("stream/open: %s", open.Raw)
	}
	if m := bob.Next(); m.Kind() != "stream/request" || m.ID() != "h1" {
		t.Fatalf("after the open: %s", m.Raw)
	}
	// She connects and writes to it.
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	send(t, alice, "#stream-1#over ws")
	expectFrame(t, bob, "#stream-1#over ws")
	expectFrame(t, alice, "#stream-1#over ws")

	status, body = post(t, g, "alice", "alice-token", `{"id":"h2","kind":"stream/request","payload":{"direction":"upload","target":["ghost"]}}`)
	if status != 400 || body["error"] != "target_not_found" || cmp.Diff([]any{"ghost"}, body["targets"]) != "" || body["id"] != "h2" {
		t.Fatalf("HTTP target_not_found: %d %v", status, body)
	}
	status, body = post(t, g, "alice", "alice-token", `{"kind":"stream/request","payload":{"direction":"sideways"}}`)
	if status != 400 || body["error"] != "invalid_envelope" {
		t.Fatalf("bad direction: %d %v", status, body)
	}
	status, body = post(t, g, "alice", "alice-token", `{"kind":"stream/request","payload":{"direction":"upload","expected_size_bytes":1.5}}`)
	if status != 400 || body["error"] != "invalid_envelope" {
		t.Fatalf("fractional size: %d %v", status, body)
	}
}

func TestStreamLimits(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	ps := joinAll(t, g, "alice", "bob")
	alice, bob := ps[0], ps[1]

	const perOwner = 64
	for i := range perOwner {
		request(alice, fmt.Sprintf("r%d", i), `{"direction":"upload"}`)
	}
	for range perOwner {
		alice.Expect("stream/open")
	}
	request(alice, "over", `{"direction":"upload"}`)
	m := alice.ExpectFunc("system/error", func(m testutil.Msg) bool { return correlatedWith(m, "over") })
	if m.Payload()["error"] != gateway.ErrorTooManyStreams {
		t.Fatalf("65th stream: %s", m.Raw)
	}
	status, body := post(t, g, "alice", "alice-token", `{"kind":"stream/request","payload":{"direction":"upload"}}`)
	if status != 429 || body["error"] != gateway.ErrorTooManyStreams {
		t.Fatalf("HTTP 65th stream: %d %v", status, body)
	}
	// Others still may; a transfer that would take bob over is refused.
	id := openStream(t, bob, "b1", `{"direction":"upload"}`)
	bob.SendText(`{"kind":"stream/transfer-ownership","payload":{"stream_id":"` + id + `","new_owner":"alice"}}`)
	expectError(t, bob, gateway.ErrorTooManyStreams)
	// Closing one makes room.
	alice.SendText(`{"kind":"stream/close","payload":{"stream_id":"stream-1"}}`)
	alice.ExpectFunc("stream/close", func(m testutil.Msg) bool { return m.Payload()["stream_id"] == "stream-1" })
	if id := openStream(t, alice, "again", `{"direction":"upload"}`); id != "stream-66" {
		t.Fatalf("after a close: %s", id)
	}
}

func TestStreamFrameRateLimit(t *testing.T) {
	g := startStreams(t, gateway.Options{Limits: gateway.Limits{SendQueue: 1 << 14, Rate: 500, Burst: 1000}})
	ps := joinAll(t, g, "alice", "bob")
	alice, bob := ps[0], ps[1]
	// Three streams buy no more than one: frames count against their
	// sender's budget, all its streams together, with its envelopes.
	var ids []string
	for i := range 3 {
		ids = append(ids, openStream(t, alice, fmt.Sprintf("r%d", i), `{"direction":"upload"}`, bob))
	}
	id := ids[0]

	// Far over the sender's bucket (1000, then 500 a second).
	const n = 5000
	began := time.Now()
	for i := range n {
		frame := []byte("#" + ids[i%len(ids)] + "#0123456789")
		if err := alice.Write(websocket.MessageText, frame); err != nil {
			t.Fatal(err)
		}
	}
	elapsed := time.Since(began)
	got := 0
	for {
		m, ok := bob.Quiet(500*time.Millisecond, func(m testutil.Msg) bool { return m.Env != nil })
		if ok {
			break
		}
		if !strings.HasSuffix(string(m.Raw), "#0123456789") {
			t.Fatalf("frame %q", m.Raw)
		}
		got++
	}
	limit := 1000 + int(500*time.Since(began).Seconds()) + 1
	if got >= n || got > limit || got < 1000-10 {
		t.Fatalf("bob received %d of %d frames sent in %v; the bucket allows %d", got, n, elapsed, limit)
	}
	// The writer is told, at most once a second.
	var limited int
	for {
		m, ok := alice.Quiet(100*time.Millisecond, func(m testutil.Msg) bool { return m.Kind() != "system/error" })
		if ok {
			break
		}
		if sid, _ := m.Payload()["stream_id"].(string); m.Payload()["error"] != "rate_limited" || !slices.Contains(ids, sid) {
			t.Fatalf("error: %s", m.Raw)
		}
		limited++
	}
	if limited < 1 || limited > int(time.Since(began).Seconds())+1 {
		t.Fatalf("%d rate_limited answers in %v", limited, time.Since(began))
	}

	// A flood of refused frames is bounded by the sender's envelope rate.
	frame := []byte("#" + id + "#0123456789")
	for range n {
		if err := bob.Write(websocket.MessageText, frame); err != nil {
			t.Fatal(err)
		}
	}
	codes := map[string]int{}
	for {
		m, ok := bob.Quiet(300*time.Millisecond, func(m testutil.Msg) bool { return m.Kind() != "system/error" })
		if ok {
			break
		}
		codes[m.Payload()["error"].(string)]++
	}
	if codes["rate_limited"] < 1 || codes[gateway.ErrorUnauthorizedStream] >= n {
		t.Fatalf("answers to %d refused frames: %v", n, codes)
	}
}

// TestStreamAuditLog checks that frames stay out of the envelope history
// while refusals are recorded.
func TestStreamAuditLog(t *testing.T) {
	g := startStreams(t, gateway.Options{})
	ps := joinAll(t, g, "alice", "bob")
	alice, bob := ps[0], ps[1]
	id := openStream(t, alice, "r1", `{"direction":"upload"}`, bob)
	send(t, alice, "#"+id+"#secret-frame-data")
	expectFrame(t, bob, "#"+id+"#secret-frame-data")
	refusedFrame(t, bob, id, "#"+id+"#refused")
	alice.SendText(`{"id":"done","kind":"chat","payload":{"text":"done"}}`)
	bob.ExpectFunc("chat", func(m testutil.Msg) bool { return m.ID() == "done" })
	g.Stop(t)
	b, err := os.ReadFile(g.LogPath("envelope-history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if strings.Contains(log, "secret-frame-data") {
		t.Fatal("a frame is in the envelope history")
	}
	lines := strings.Split(log, "\n")
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.Contains(l, `"event":"rejected"`) && strings.Contains(l, `"reason":"unauthorized_stream_write"`)
	}) {
		t.Fatalf("no rejected line for the refused frame:\n%s", log)
	}
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.Contains(l, `"event":"received"`) && strings.Contains(l, `"kind":"stream/request"`)
	}) {
		t.Fatal("no received line for the stream/request")
	}
}
