package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/space"
)

// distinctPorts returns n distinct ports that were free a moment ago.
func distinctPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for len(ports) < n {
		if p := freeTCPPort(t); !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports
}

// heardFrom waits up to wait for m to receive env (by id), and says whether it did.
func heardFrom(m *member, env *protocol.Envelope, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if m.Find(withEnvID(env.ID)) != nil {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

// refused reports whether m was told its envelope env was refused, and why.
func refused(m *member, env *protocol.Envelope) (string, bool) {
	e := m.Find(func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindSystemError && slices.Contains(e.CorrelationID, env.ID)
	})
	if e == nil {
		return "", false
	}
	return string(e.Payload), true
}

// spawnEmbeddedNodes starts three `mew gateway start` nodes for the space
// at cfgPath that each embed a NATS server of one NATS cluster, all at
// once, and waits until each answers; it returns them with the client and
// route ports of their NATS servers.
func spawnEmbeddedNodes(t *testing.T, cfgPath string) (nodes []*nodeProc, clientPorts, routePorts []int) {
	t.Helper()
	ports := distinctPorts(t, 6)
	clientPorts, routePorts = ports[:3], ports[3:]
	var found []<-chan string
	for i := range 3 {
		n, f := spawnNode(t, cfgPath, "n"+strconv.Itoa(i+1), embeddedNodeArgs(i, clientPorts, routePorts)...)
		nodes, found = append(nodes, n), append(found, f)
	}
	for i, n := range nodes {
		n.await(t, found[i], 90*time.Second)
	}
	return nodes, clientPorts, routePorts
}

// TestClusterEmbeddedNATSNodeKilled runs three `mew gateway start` nodes that each embed a NATS
// server of one NATS cluster (JetStream replicas 3), started together, and kills the first with
// SIGKILL — its NATS server with it. The two others keep exchanging envelopes across nodes
// without a refusal; a participant of the dead node reconnects to a surviving node, still holds
// the grant it had before the kill, and is heard; a grant made after the kill (a JetStream write
// with two of three servers left) reaches a participant on the other surviving node. What was
// granted before the kill is honoured after it. The logs of the nodes hold neither secret.
func TestClusterEmbeddedNATSNodeKilled(t *testing.T) {
	cfgPath := writeSpace(t, failoverSpace)
	dir := filepath.Dir(cfgPath)
	nodes, clientPorts, _ := spawnEmbeddedNodes(t, cfgPath)
	n1, n2, n3 := nodes[0], nodes[1], nodes[2]
	t.Cleanup(func() { // what the nodes and their NATS servers said, when it failed
		if t.Failed() {
			for _, n := range nodes {
				t.Logf("node %s:\n%s", n.id, n.log.String())
			}
		}
	})
	for _, n := range nodes {
		if !strings.Contains(n.log.String(), `replicas=3`) {
			t.Fatalf("node %s did not join with replicas 3:\n%s", n.id, n.log.String())
		}
	}

	// The worst case: every stream's leader on the node to be killed, so that each must be
	// elected again among the two others before it takes a write.
	leadFrom(t, clientPorts[0], filepath.Join(dir, "nats-auth", "nodes.nk"), "n1")

	elected := leaderElections(t, clientPorts[2], filepath.Join(dir, "nats-auth", "nodes.nk"), "KV_mew_mew_state")

	admin := joinNodes(t, "admin-token", n3.url)
	alice := joinNodes(t, "alice-token", n1.url, n2.url)
	carol := joinNodes(t, "carol-token", n2.url)
	bob := joinNodes(t, "bob-token", n3.url)
	waitUntil(t, "everyone to see everyone", func() bool {
		return admin.sees("alice", "carol", "bob") && carol.sees("admin", "alice", "bob") && bob.sees("admin", "alice", "carol")
	})

	// A grant made on node 1 before the kill: alice, on node 1, may propose.
	p1 := grantAndPropose(t, admin, alice)
	waitUntil(t, "bob (node 3) to see alice's proposal", func() bool { return bob.Find(withEnvID(p1.ID)) != nil })
	// Node 2 knows the grant from the cluster's state: carol's node applied it.
	c0 := sendEnv(t, carol, protocol.KindChat, protocol.Chat{Text: "before"})
	waitUntil(t, "bob to hear carol before the kill", func() bool { return bob.Find(withEnvID(c0.ID)) != nil })

	aliceWelcomes := alice.welcomeCount()
	killed := time.Now()
	n1.kill(t)

	// At once, admin (node 3) grants carol (node 2) a proposal: the grant reaches node 2
	// through the state bucket, whose leader died, so it is written once JetStream has
	// elected another.
	sendEnv(t, admin, protocol.KindCapabilityGrant, protocol.Grant{
		Recipient: "carol", Capabilities: []json.RawMessage{json.RawMessage(`{"kind":"mcp/proposal"}`)},
	})

	// Carol (node 2) and bob (node 3) talk on: every chat of theirs is heard on the other node,
	// none refused. Twenty rounds over about four seconds, the first at once.
	var worst time.Duration
	worstRound := 0
	for round := range 20 {
		from, to := carol, bob
		if round%2 == 1 {
			from, to = bob, carol
		}
		sent := time.Now()
		env := sendEnv(t, from, protocol.KindChat, protocol.Chat{Text: fmt.Sprintf("round %d", round)})
		if !heardFrom(to, env, 10*time.Second) {
			why, _ := refused(from, env)
			t.Fatalf("round %d (%.1fs after the kill): not heard on the other node; refusal: %q\nnode 2:\n%s\nnode 3:\n%s",
				round, time.Since(killed).Seconds(), why, n2.log.String(), n3.log.String())
		}
		if d := time.Since(sent); d > worst {
			worst, worstRound = d, round
		}
		if why, ok := refused(from, env); ok {
			t.Errorf("round %d: refused: %s", round, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("after the kill: 20 chats between nodes 2 and 3, none refused, slowest heard in %v (round %d)", worst.Round(time.Millisecond), worstRound)

	// A stream opened on node 3 after the kill is announced on node 2: stream changes go
	// through the cluster's log, whose leader died with node 1, and node 2's follower of it
	// must notice its consumer gone.
	streamAsked := time.Now()
	req := sendEnv(t, admin, protocol.KindStreamRequest, map[string]any{"direction": "upload", "description": "after the kill"})
	waitUntilFor(t, 60*time.Second, "carol (node 2) to see the stream opened on node 3", func() bool {
		return carol.Find(func(e *protocol.Envelope) bool {
			return e.Kind == protocol.KindStreamOpen && slices.Contains(e.CorrelationID, req.ID)
		}) != nil
	})
	t.Logf("a stream requested on node 3 %v after the kill was announced on node 2 %v later",
		streamAsked.Sub(killed).Round(time.Millisecond), time.Since(streamAsked).Round(time.Millisecond))

	// Alice moves to node 2 and is welcomed with her grant: it is in the replicated state.
	waitUntilFor(t, 30*time.Second, "alice's welcome on node 2", func() bool {
		return alice.welcomeCount() > aliceWelcomes && alice.c.State() == client.Ready
	})
	if !strings.HasPrefix(alice.c.URL(), n2.url) {
		t.Errorf("alice reconnected to %s, want node 2 (%s)", alice.c.URL(), n2.url)
	}
	if w := alice.lastWelcome(); !hasKind(w, "mcp/proposal") {
		t.Errorf("alice's welcome on node 2 lacks her grant: %s", w.You.Capabilities)
	}
	p2 := sendEnv(t, alice, protocol.KindMCPProposal, proposalX)
	if !heardFrom(bob, p2, 10*time.Second) {
		t.Fatal("bob (node 3) never saw alice's proposal from node 2")
	}
	if why, ok := refused(alice, p2); ok {
		t.Errorf("node 2 refused alice's granted proposal: %s", why)
	}
	c1 := sendEnv(t, alice, protocol.KindChat, protocol.Chat{Text: "back, on node 2"})
	if !heardFrom(carol, c1, 10*time.Second) || !heardFrom(bob, c1, 10*time.Second) {
		t.Fatal("alice's chat from node 2 did not reach carol and bob")
	}

	waitUntilFor(t, 30*time.Second, "carol's welcome with the grant made after the kill", func() bool {
		return hasKind(carol.lastWelcome(), "mcp/proposal")
	})
	// JetStream elects the state's leader again within its election timeout (4 to 9 s), and
	// the grant is written then; node 2's watch starts again at the election, where waiting
	// for nats.go to notice its consumer gone would take 15 s more.
	got, _ := carol.lastWelcomeAt()
	at, ok := elected()
	switch {
	case !ok:
		t.Error("no leader election of the state bucket's stream was seen after the kill")
	case got.Sub(at) > 5*time.Second:
		t.Errorf("the grant reached carol %v after the state's new leader was elected, want within 5s", got.Sub(at))
	}
	t.Logf("the grant sent on node 3 right after the kill reached carol on node 2 %v after the kill; the state's leader was elected again %v after it",
		got.Sub(killed).Round(time.Millisecond), at.Sub(killed).Round(time.Millisecond))
	p3 := sendEnv(t, carol, protocol.KindMCPProposal, proposalX)
	if !heardFrom(bob, p3, 10*time.Second) {
		t.Fatal("bob never saw carol's proposal")
	}
	if why, ok := refused(carol, p3); ok {
		t.Errorf("node 2 refused carol's proposal granted after the kill: %s", why)
	}
	// The survivors never saw each other leave.
	for name, m := range map[string]*member{"carol": carol, "bob": bob} {
		for _, other := range []string{"carol", "bob"} {
			if at, ok := m.left(other); ok && other != name {
				t.Errorf("%s saw %s leave %v after the kill", name, other, at.Sub(killed))
			}
		}
	}

	// No secret in the nodes' logs.
	seed, _ := os.ReadFile(filepath.Join(dir, "nats-auth", "nodes.nk"))
	secret, _ := os.ReadFile(filepath.Join(dir, "nats-auth", "routes.secret"))
	if len(strings.TrimSpace(string(seed))) == 0 || len(strings.TrimSpace(string(secret))) == 0 {
		t.Fatal("the space's NATS seed or route secret is missing")
	}
	for _, n := range nodes {
		if l := n.log.String(); strings.Contains(l, strings.TrimSpace(string(seed))) || strings.Contains(l, strings.TrimSpace(string(secret))) {
			t.Errorf("node %s logged a secret", n.id)
		}
	}
}

// lastWelcomeAt returns when m's last welcome arrived.
func (m *member) lastWelcomeAt() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.welcomedAt, !m.welcomedAt.IsZero()
}

// natsConn connects to the NATS server at port of 127.0.0.1 with the
// space's seed, as a node does, until the test ends.
func natsConn(t *testing.T, port int, seedFile string) *nats.Conn {
	t.Helper()
	opt, err := nats.NkeyOptionFromSeed(seedFile)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect("nats://127.0.0.1:"+strconv.Itoa(port), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// leadFrom moves the leader of every stream of the cluster "mew" to the NATS server named
// leader, through the server at port, with the space's seed.
func leadFrom(t *testing.T, port int, seedFile, leader string) {
	t.Helper()
	nc := natsConn(t, port, seedFile)
	defer nc.Close() // at once, not at the end: the test goes on to kill servers
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"KV_mew_mew_state", "KV_mew_mew_presence", "mew_mew_log", "mew_mew_history"} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			st, err := js.Stream(ctx, name)
			var info *jetstream.StreamInfo
			if err == nil {
				info, err = st.Info(ctx)
			}
			if err == nil && info.Cluster != nil && info.Cluster.Leader == leader {
				cancel()
				break
			}
			if err == nil {
				_, err = nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+name, []byte(`{"placement":{"preferred":"`+leader+`"}}`))
			}
			cancel()
			if time.Now().After(deadline) {
				t.Fatalf("the leader of %s did not move to %s: %v", name, leader, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// leaderElections listens, through the NATS server at port with the space's seed, for
// JetStream's advisories of leader elections of stream, and returns a function that tells when
// the last one came.
func leaderElections(t *testing.T, port int, seedFile, stream string) func() (time.Time, bool) {
	t.Helper()
	nc := natsConn(t, port, seedFile)
	var mu sync.Mutex
	var last time.Time
	if _, err := nc.Subscribe("$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED."+stream, func(*nats.Msg) {
		mu.Lock()
		last = time.Now()
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return func() (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		return last, !last.IsZero()
	}
}

// waitUntilFor is waitUntil with its own deadline.
func waitUntilFor(t *testing.T, wait time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.WaitFor(t, wait, what, cond)
}

// TestSpaceUpNodesReplicated: `mew space up --nodes 3` starts three nodes that each embed a NATS
// server of one NATS cluster, each handed the space's seed and route secret by their paths (never
// the secrets in argv). A SIGKILL of the first node leaves the two others serving across nodes; a
// participant of the first moves to the second; the supervisor starts the first again, its server
// rejoins the cluster, and a participant joining it hears the others.
func TestSpaceUpNodesReplicated(t *testing.T) {
	dir := spaceDir(t, failoverSpace)
	start := time.Now()
	out, err := mew(t, dir, "space", "up", "--detach", "-p", "0", "--nodes", "3")
	st, rerr := upState(t, dir)
	if err != nil || rerr != nil || len(st.Nodes) != 3 {
		t.Fatalf("space up --nodes 3: %v %v\n%s", err, rerr, out)
	}
	t.Logf("space up --nodes 3 answered in %v", time.Since(start).Round(10*time.Millisecond))
	seedPath, secretPath := filepath.Join(dir, "nats-auth", "nodes.nk"), filepath.Join(dir, "nats-auth", "routes.secret")
	seed, _ := os.ReadFile(seedPath)
	secret, _ := os.ReadFile(secretPath)
	if fi, err := os.Stat(secretPath); err != nil || fi.Mode().Perm() != 0o600 || len(strings.TrimSpace(string(secret))) < 32 {
		t.Fatalf("the route secret file: %v %v", err, fi)
	}
	for i, n := range st.Nodes {
		argv, err := os.ReadFile("/proc/" + strconv.Itoa(n.PID) + "/cmdline")
		if err != nil {
			t.Fatal(err)
		}
		a := string(argv)
		if !strings.Contains(a, "--nats-route-secret\x00"+secretPath) || !strings.Contains(a, "--nats-nkey\x00"+seedPath) ||
			!strings.Contains(a, "--nats\x00embedded:") || !strings.Contains(a, "--nats-routes\x00") ||
			strings.Contains(a, strings.TrimSpace(string(secret))) || strings.Contains(a, strings.TrimSpace(string(seed))) {
			t.Errorf("node %d's argv: %q", i+1, argv)
		}
	}
	for _, log := range []string{"gateway.log", "gateway-node-2.log", "gateway-node-3.log"} {
		data, _ := os.ReadFile(filepath.Join(dir, "logs", log))
		if !strings.Contains(string(data), "replicas=3") {
			t.Errorf("%s: no join with replicas 3:\n%s", log, data)
		}
	}
	urls := runNodeURLs(st.Nodes)
	alice := joinNodes(t, "alice-token", urls[0], urls[1])
	carol := joinNodes(t, "carol-token", urls[1])
	bob := joinNodes(t, "bob-token", urls[2])
	waitUntil(t, "everyone to see everyone", func() bool { return alice.sees("carol", "bob") && bob.sees("alice", "carol") })

	welcomes := alice.welcomeCount()
	killed := time.Now()
	if err := syscall.Kill(st.Nodes[0].PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		from, to := carol, bob
		if round%2 == 1 {
			from, to = bob, carol
		}
		env := sendEnv(t, from, protocol.KindChat, protocol.Chat{Text: fmt.Sprintf("round %d", round)})
		if !heardFrom(to, env, 10*time.Second) {
			t.Fatalf("round %d, %v after the kill: not heard on the other node", round, time.Since(killed))
		}
		if why, ok := refused(from, env); ok {
			t.Errorf("round %d: refused: %s", round, why)
		}
	}
	waitUntilFor(t, 30*time.Second, "alice's welcome on node 2", func() bool {
		return alice.welcomeCount() > welcomes && alice.c.State() == client.Ready
	})
	c1 := sendEnv(t, alice, protocol.KindChat, protocol.Chat{Text: "on node 2"})
	if !heardFrom(bob, c1, 10*time.Second) {
		t.Fatal("alice's chat from node 2 never reached bob on node 3")
	}

	// The supervisor starts node 1 again, on its ports and store: it rejoins the cluster.
	var back space.RunNode
	waitUntilFor(t, 60*time.Second, "node 1 started again", func() bool {
		s, err := space.ReadRunState(dir)
		if err != nil || len(s.Nodes) != 3 || s.Nodes[0].PID == st.Nodes[0].PID || s.Nodes[0].PID == 0 {
			return false
		}
		back = s.Nodes[0]
		resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(back.Port) + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	t.Logf("node 1 answered again %v after the kill", time.Since(killed).Round(10*time.Millisecond))
	dave := joinNodes(t, "dave-token", urls[0])
	var heard bool
	for range 20 { // dave's join may reach node 2 a moment after his welcome
		env := sendEnv(t, carol, protocol.KindChat, protocol.Chat{Text: "to the restarted node"})
		if heard = heardFrom(dave, env, 500*time.Millisecond); heard {
			break
		}
	}
	if !heard {
		t.Fatal("dave, on the restarted node 1, never heard carol on node 2")
	}
	if out, err := mew(t, dir, "space", "down"); err != nil {
		t.Fatalf("down: %v\n%s", err, out)
	}
}

// TestClusterEmbeddedNATSTwoDeaths: with two of the three nodes killed, JetStream has no
// majority. The last node still serves its own participants (their envelopes reach each other,
// none refused); once one dead node is started again on its ports and store, the majority is
// back and a grant made on one node reaches a participant on the other.
func TestClusterEmbeddedNATSTwoDeaths(t *testing.T) {
	cfgPath := writeSpace(t, failoverSpace)
	nodes, clientPorts, routePorts := spawnEmbeddedNodes(t, cfgPath)
	admin := joinNodes(t, "admin-token", nodes[2].url)
	bob := joinNodes(t, "bob-token", nodes[2].url)
	waitUntil(t, "admin to see bob", func() bool { return admin.sees("bob") })

	killed := time.Now()
	nodes[0].kill(t)
	nodes[1].kill(t)
	chat := sendEnv(t, bob, protocol.KindChat, protocol.Chat{Text: "alone on node 3"})
	if !heardFrom(admin, chat, 10*time.Second) {
		t.Fatal("admin never heard bob on their own node")
	}
	if why, ok := refused(bob, chat); ok {
		t.Errorf("node 3 refused bob's chat: %s", why)
	}

	// Node 2 again, on its ports and store: it waits for the majority it makes with node 3.
	n2, f2 := spawnNode(t, cfgPath, "n2", embeddedNodeArgs(1, clientPorts, routePorts)...)
	n2.await(t, f2, 90*time.Second)
	t.Logf("node 2, started again, answered %v after the kills", time.Since(killed).Round(10*time.Millisecond))
	carol := joinNodes(t, "carol-token", n2.url)
	waitUntilFor(t, 30*time.Second, "carol (node 2) to see admin and bob", func() bool { return carol.sees("admin", "bob") })
	sendEnv(t, admin, protocol.KindCapabilityGrant, protocol.Grant{
		Recipient: "carol", Capabilities: []json.RawMessage{json.RawMessage(`{"kind":"mcp/proposal"}`)},
	})
	waitUntilFor(t, 30*time.Second, "carol's welcome with the grant made on node 3", func() bool {
		return hasKind(carol.lastWelcome(), "mcp/proposal")
	})
}
