package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mew-protocol/mew/client"
	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
)

// failoverSpace: admin may grant; the others may only chat until granted more.
const failoverSpace = `
space: {id: failover}
participants:
  admin: {tokens: [admin-token], capabilities: [{kind: "*"}]}
  alice: {tokens: [alice-token], capabilities: [{kind: chat}, {kind: capability/grant-ack}]}
  bob: {tokens: [bob-token], capabilities: [{kind: chat}]}
  carol: {tokens: [carol-token], capabilities: [{kind: chat}]}
  dave: {tokens: [dave-token], capabilities: [{kind: chat}]}
`

// nodeProc is one `mew gateway start` node run as a child process.
type nodeProc struct {
	id   string
	cmd  *exec.Cmd
	url  string // ws://addr
	log  *testutil.Buffer
	done chan struct{} // closed once the process has been waited for
}

// freeTCPPort returns a port that was free a moment ago.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startNode starts the built mew as gateway node id of the space in cfgPath, with its own audit
// log directory, and waits for its listening line. The node is stopped (SIGTERM, then SIGKILL)
// when the test ends, if it still runs.
func startNode(t *testing.T, cfgPath, id string, args ...string) *nodeProc {
	t.Helper()
	n, found := spawnNode(t, cfgPath, id, args...)
	n.await(t, found, 30*time.Second)
	return n
}

// spawnNode starts node id as startNode does, without waiting: its listening address comes on
// found (await). Nodes that need each other to start (embedded NATS servers of one cluster,
// which elect JetStream's leaders once a majority has met) are spawned together.
func spawnNode(t *testing.T, cfgPath, id string, args ...string) (*nodeProc, <-chan string) {
	t.Helper()
	dir := filepath.Dir(cfgPath)
	all := append([]string{"gateway", "start", "-p", "0", "-s", cfgPath, "--node-id", id,
		"--log-dir", filepath.Join(dir, "audit-"+id), "-l", "debug"}, args...)
	n := &nodeProc{id: id, cmd: exec.Command(mewBinary(t), all...), log: &testutil.Buffer{}, done: make(chan struct{})}
	n.cmd.Dir = dir
	n.cmd.Env = cleanEnv()
	n.cmd.Stderr = n.log
	out, err := n.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	found := make(chan string, 1)
	var reader sync.WaitGroup
	reader.Add(1)
	go func() { // ends at the end of the child's stdout
		defer reader.Done()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				select {
				case found <- addr:
				default:
				}
			}
		}
	}()
	go func() { reader.Wait(); _ = n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		_ = n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.done:
		case <-time.After(20 * time.Second):
			_ = n.cmd.Process.Kill()
			<-n.done
		}
	})
	return n, found
}

// await waits up to wait for the listening address of a spawned node.
func (n *nodeProc) await(t *testing.T, found <-chan string, wait time.Duration) {
	t.Helper()
	select {
	case addr := <-found:
		n.url = "ws://" + addr
	case <-n.done:
		t.Fatalf("node %s exited:\n%s", n.id, n.log.String())
	case <-time.After(wait):
		t.Fatalf("node %s did not listen:\n%s", n.id, n.log.String())
	}
}

// kill ends the node with SIGKILL: no leave, no goodbye to NATS.
func (n *nodeProc) kill(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the killed node did not exit")
	}
}

// member is a participant's client in the failover test and what it saw.
type member struct {
	c               *client.Client
	*testutil.Inbox // every envelope it received

	mu         sync.Mutex
	welcomes   []*protocol.Welcome
	welcomedAt time.Time            // when the last welcome arrived
	leftAt     map[string]time.Time // participant → when its presence leave arrived
}

// joinNodes connects with token to the gateway URLs, in order.
func joinNodes(t *testing.T, token string, urls ...string) *member {
	t.Helper()
	c, err := client.New(client.Options{
		Gateways: urls, Space: "failover", Token: token,
		Reconnect: true, ReconnectDelay: 50 * time.Millisecond, MaxReconnectDelay: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &member{c: c, Inbox: testutil.Watch(c), leftAt: map[string]time.Time{}}
	c.OnWelcome(func(w *protocol.Welcome) {
		m.mu.Lock()
		m.welcomes, m.welcomedAt = append(m.welcomes, w), time.Now()
		m.mu.Unlock()
	})
	c.OnMessage(func(e *protocol.Envelope) {
		var p protocol.Presence
		if e.Kind == protocol.KindSystemPresence && e.DecodePayload(&p) == nil && p.Event == protocol.PresenceLeave {
			m.mu.Lock()
			m.leftAt[p.Participant.ID] = time.Now()
			m.mu.Unlock()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("%s: connect to %v: %v", token, urls, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return m
}

func (m *member) welcomeCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.welcomes)
}

// lastWelcome returns the newest welcome m's handler saw, or nil: Connect
// returns before the OnWelcome handlers have run.
func (m *member) lastWelcome() *protocol.Welcome {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.welcomes) == 0 {
		return nil
	}
	return m.welcomes[len(m.welcomes)-1]
}

func (m *member) left(id string) (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at, ok := m.leftAt[id]
	return at, ok
}

// sees reports whether each of ids is in m's last welcome or joined in a
// presence envelope m received.
func (m *member) sees(ids ...string) bool {
	w := m.lastWelcome()
	for _, id := range ids {
		if lists(w, id) {
			continue
		}
		if m.Find(func(e *protocol.Envelope) bool {
			var p protocol.Presence
			return e.Kind == protocol.KindSystemPresence && e.DecodePayload(&p) == nil && p.Event == protocol.PresenceJoin && p.Participant.ID == id
		}) == nil {
			return false
		}
	}
	return true
}

// lists reports whether w lists every one of ids among the others.
func lists(w *protocol.Welcome, ids ...string) bool {
	if w == nil {
		return false
	}
	for _, id := range ids {
		if !slices.ContainsFunc(w.Participants, func(p protocol.ParticipantInfo) bool { return p.ID == id }) {
			return false
		}
	}
	return true
}

// hasKind reports whether w gives its participant a capability of kind.
func hasKind(w *protocol.Welcome, kind string) bool {
	if w == nil {
		return false
	}
	return slices.ContainsFunc(w.You.Capabilities, func(c json.RawMessage) bool {
		var cap struct{ Kind string }
		return json.Unmarshal(c, &cap) == nil && cap.Kind == kind
	})
}

// grantAndPropose has admin grant alice mcp/proposal, waits until alice's
// welcome holds it, and returns the proposal (proposalX) alice then sends: a write to
// the cluster's state that every node must honour.
func grantAndPropose(t *testing.T, admin, alice *member) *protocol.Envelope {
	t.Helper()
	sendEnv(t, admin, protocol.KindCapabilityGrant, protocol.Grant{
		Recipient: "alice", Capabilities: []json.RawMessage{json.RawMessage(`{"kind":"mcp/proposal"}`)},
	})
	waitUntil(t, "alice's welcome with the grant", func() bool { return hasKind(alice.lastWelcome(), "mcp/proposal") })
	return sendEnv(t, alice, protocol.KindMCPProposal, proposalX)
}

// proposalX is the payload of the proposals of the cluster tests.
var proposalX = map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{"name": "x"}}

func sendEnv(t *testing.T, m *member, kind string, payload any) *protocol.Envelope {
	t.Helper()
	env, err := protocol.New(kind, payload)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.c.Send(ctx, env); err != nil {
		t.Fatalf("send %s: %v", kind, err)
	}
	return env
}

// TestClusterNodeKilled runs three `mew gateway start` nodes on the first one's embedded NATS
// server and kills the second with SIGKILL. The others see its participants leave within the
// presence TTL (--presence-ttl); a participant that was on it, given both URLs, reconnects to the third node, is
// welcomed with everyone, its chats reach a participant on the first node, and a grant it had
// before still applies.
func TestClusterNodeKilled(t *testing.T) {
	cfgPath := writeSpace(t, failoverSpace)
	natsPort := freeTCPPort(t)
	// A presence TTL shorter than the default: the leave below, due within
	// it, shows the flag took (the default would come 6 s later).
	const ttl = 4 * time.Second
	n1 := startNode(t, cfgPath, "n1", "--nats", "embedded:"+strconv.Itoa(natsPort), "--presence-ttl", ttl.String())
	natsURL := "nats://127.0.0.1:" + strconv.Itoa(natsPort)
	// The others hold the seed the first node's embedded server admits.
	seed := filepath.Join(filepath.Dir(cfgPath), "nats-auth", "nodes.nk")
	n2 := startNode(t, cfgPath, "n2", "--nats", natsURL, "--nats-nkey", seed, "--presence-ttl", ttl.String())
	n3 := startNode(t, cfgPath, "n3", "--nats", natsURL, "--nats-nkey", seed, "--presence-ttl", ttl.String())

	admin := joinNodes(t, "admin-token", n1.url)
	carol := joinNodes(t, "carol-token", n1.url)
	bob := joinNodes(t, "bob-token", n3.url)
	dave := joinNodes(t, "dave-token", n2.url) // one URL: it stays down with its node
	alice := joinNodes(t, "alice-token", n2.url, n3.url)
	// Her node may welcome her before another node's join has reached it; the
	// presence that follows completes her view.
	waitUntil(t, "alice to see everyone", func() bool { return alice.sees("admin", "carol", "bob", "dave") })

	// A grant made on node 1 reaches alice on node 2; her proposal goes through.
	p1 := grantAndPropose(t, admin, alice)
	waitUntil(t, "carol to see alice's proposal", func() bool { return carol.Find(withEnvID(p1.ID)) != nil })

	welcomesBefore := alice.welcomeCount()
	killed := time.Now()
	n2.kill(t)

	// Alice moves to node 3 and is welcomed there with everyone still connected.
	waitUntil(t, "alice's welcome on node 3", func() bool {
		return alice.welcomeCount() > welcomesBefore && alice.c.State() == client.Ready
	})
	if !strings.HasPrefix(alice.c.URL(), n3.url) {
		t.Errorf("alice reconnected to %s, want node 3 (%s)", alice.c.URL(), n3.url)
	}
	w := alice.lastWelcome()
	if !lists(w, "admin", "carol", "bob") {
		t.Errorf("alice's welcome on node 3 lists %v", w.Participants)
	}
	// Her grant is in the cluster's state, not on the dead node.
	if !hasKind(w, "mcp/proposal") {
		t.Errorf("alice's welcome on node 3 lacks her grant: %s", w.You.Capabilities)
	}
	chat := sendEnv(t, alice, protocol.KindChat, protocol.Chat{Text: "back, on node 3"})
	waitUntil(t, "carol (node 1) to hear alice from node 3", func() bool { return carol.Find(withEnvID(chat.ID)) != nil })
	p2 := sendEnv(t, alice, protocol.KindMCPProposal, proposalX)
	waitUntil(t, "carol to see alice's proposal from node 3", func() bool { return carol.Find(withEnvID(p2.ID)) != nil })
	if e := alice.Find(func(e *protocol.Envelope) bool {
		return e.Kind == protocol.KindSystemError && slices.Contains(e.CorrelationID, p2.ID)
	}); e != nil {
		t.Errorf("node 3 refused alice's granted proposal: %s", e.Payload)
	}

	// Dave, who had node 2 alone, leaves everyone's view within the presence TTL.
	var lags []string
	for name, m := range map[string]*member{"carol (node 1)": carol, "bob (node 3)": bob} {
		deadline := killed.Add(ttl + 5*time.Second) // the TTL, and slack for a loaded machine
		for {
			at, ok := m.left("dave")
			if ok {
				lag := at.Sub(killed)
				lags = append(lags, fmt.Sprintf("%s %v", name, lag.Round(10*time.Millisecond)))
				if lag > ttl+2*time.Second {
					t.Errorf("%s saw dave leave %v after the kill; the TTL is %v", name, lag, ttl)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never saw dave leave (waited %v)", name, time.Since(killed))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("presence leave after SIGKILL (TTL %v): %s", ttl, strings.Join(lags, ", "))
	// Alice never left: her new join replaced her entry, so no leave of hers reached anyone.
	if at, ok := carol.left("alice"); ok {
		t.Logf("carol saw alice leave %v after the kill (before her new join landed)", at.Sub(killed))
	}
	if dave.c.State() == client.Ready {
		t.Error("dave, whose only node was killed, is still Ready")
	}
	var lost error
	select {
	case <-n1.done:
		lost = errors.New("node 1 exited")
	case <-n3.done:
		lost = errors.New("node 3 exited")
	default:
	}
	if lost != nil {
		t.Fatalf("%v:\n%s", lost, n1.log.String()+n3.log.String())
	}
}

func withEnvID(id string) func(*protocol.Envelope) bool {
	return func(e *protocol.Envelope) bool { return e.ID == id }
}
