package natscluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/clustertest"
)

// waitFor polls cond until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not after %v", what, d)
		}
		// Fine steps at first, so that short delays are measured.
		step := 20 * time.Millisecond
		if time.Since(start) < 50*time.Millisecond {
			step = 100 * time.Microsecond
		}
		time.Sleep(step)
	}
	return time.Since(start)
}

// TestServerRestart stops the NATS server under two nodes and starts it
// again on the same port and store: the nodes report the outage, refuse
// writes meanwhile, reconnect, and their watches and subscriptions resume.
func TestServerRestart(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, ServerOptions{StoreDir: dir})
	port := s.Addr().(*net.TCPAddr).Port
	a, b := newNode(t, s.ClientURL(), "a"), newNode(t, s.ClientURL(), "b")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	key := cluster.GrantKey("p", "g1")
	if _, err := a.State().Put(ctx, "sp", key, []byte("v1"), cluster.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := b.State().Watch(ctx, "sp")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if e := clustertest.NextChange(t, w, 5*time.Second); e.Op != cluster.OpPut {
		t.Fatalf("%+v", e)
	}
	if e := clustertest.NextChange(t, w, 5*time.Second); e.Op != cluster.OpSynced {
		t.Fatalf("%+v", e)
	}
	got := make(chan string, 16)
	if _, err := b.Broker().Subscribe(ctx, "sp", func(m cluster.Message) { got <- string(m.Data) }); err != nil {
		t.Fatal(err)
	}
	if err := b.Presence().Join(ctx, "sp", cluster.Member{Participant: "agent", Conn: "b-1"}); err != nil {
		t.Fatal(err)
	}
	followed := make(chan string, 16)
	if _, err := b.Log().Follow(ctx, "sp", 0, func(r cluster.Record) { followed <- string(r.Data) }); err != nil {
		t.Fatal(err)
	}

	s.Shutdown()
	s.WaitForShutdown()
	d := waitFor(t, 5*time.Second, "a reports the outage", func() bool { return errors.Is(a.Err(), cluster.ErrUnavailable) })
	t.Logf("outage reported after %v: %v", d, a.Err())
	if _, err := a.State().Put(ctx, "sp", key, []byte("lost"), cluster.PutOptions{}); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("put during the outage: %v, want ErrUnavailable", err)
	}
	if err := a.Broker().Publish(ctx, "sp", []byte("lost")); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("publish during the outage: %v, want ErrUnavailable", err)
	}

	startServer(t, ServerOptions{StoreDir: dir, Port: port})
	start := time.Now()
	waitFor(t, 15*time.Second, "both reconnect", func() bool { return a.Err() == nil && b.Err() == nil })
	t.Logf("reconnected after %v", time.Since(start))
	// The state survived (file storage), and the watch resumes.
	var rev uint64
	waitFor(t, 15*time.Second, "a write after the restart", func() bool {
		r, err := a.State().Put(ctx, "sp", key, []byte("v2"), cluster.PutOptions{})
		rev = r
		return err == nil
	})
	for {
		e := clustertest.NextChange(t, w, 20*time.Second)
		if e.Op == cluster.OpPut && string(e.Value) == "v2" && e.Revision == rev {
			break
		}
	}
	t.Logf("watch resumed %v after the restart", time.Since(start))
	// The log's follower resumes too (its ordered consumer recreates
	// itself).
	if _, err := a.Log().Append(ctx, "sp", []byte("logged")); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-followed:
		if r != "logged" {
			t.Fatalf("followed %q", r)
		}
		t.Logf("log follow resumed %v after the restart", time.Since(start))
	case <-time.After(20 * time.Second):
		t.Fatal("the log's follower did not resume")
	}
	// b's participant is still present several TTLs later: its
	// refreshes went on after the restart.
	time.Sleep(3 * clustertest.PresenceTTL)
	list, err := a.Presence().List(ctx, "sp")
	if err != nil || len(list) != 1 || list[0].Conn != "b-1" {
		t.Fatalf("presence after the restart: %+v %v", list, err)
	}
	waitFor(t, 10*time.Second, "the subscription resumes", func() bool {
		_ = a.Broker().Publish(ctx, "sp", []byte("after"))
		select {
		case m := <-got:
			return m == "after"
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
}

// TestPartition cuts one node off NATS (its connection closes under it):
// it says so, and its participants' presence leaves within the TTL on the
// node that remains.
func TestPartition(t *testing.T) {
	s := startServer(t, ServerOptions{})
	a, b := newNode(t, s.ClientURL(), "a"), newNode(t, s.ClientURL(), "b")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Presence().Join(ctx, "sp", cluster.Member{Participant: "agent", Conn: "b-1"}); err != nil {
		t.Fatal(err)
	}
	w, err := a.Presence().Watch(ctx, "sp")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for e := clustertest.NextChange(t, w, 5*time.Second); e.Op != cluster.OpSynced; e = clustertest.NextChange(t, w, 5*time.Second) {
	}
	b.nc.Close() // the network between b and NATS is gone for good
	d := waitFor(t, time.Second, "the cut-off node reports it", func() bool { return errors.Is(b.Err(), cluster.ErrUnavailable) })
	t.Logf("reported after %v: %v", d, b.Err())
	start := time.Now()
	for {
		e := clustertest.NextChange(t, w, 5*time.Second)
		if e.Op == cluster.OpDelete && e.Key == "agent" {
			break
		}
	}
	if d := time.Since(start); d > clustertest.PresenceTTL+time.Second {
		t.Errorf("presence left after %v", d)
	}
}

// TestNames checks the escaping of names into NATS tokens.
func TestNames(t *testing.T) {
	for _, s := range []string{"a", "space.one", "x*y>z", "with space\t", "ünïcode", "_5F", "-", "a_b"} {
		e := escape(s)
		for i := 0; i < len(e); i++ {
			c := e[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				t.Errorf("escape(%q) = %q has %q", s, e, c)
			}
		}
		if u, err := unescape(e); err != nil || u != s {
			t.Errorf("unescape(escape(%q)) = %q, %v", s, u, err)
		}
	}
	for _, bad := range []string{"_", "_4", "_zz", "_41", "a_4"} {
		if _, err := unescape(bad); !errors.Is(err, cluster.ErrInvalid) {
			t.Errorf("unescape(%q): %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := stateKey("sp.", "other.x"); err == nil {
		t.Error("a key of another space decoded")
	}
	if k, err := stateKey("sp.", kvKey("sp", "grant/a.b/g 1")[3:]); err == nil {
		t.Errorf("a key without its prefix decoded as %q", k)
	}
	if k, err := stateKey(escape("s p")+".", kvKey("s p", "grant/a.b/g 1")); err != nil || k != "grant/a.b/g 1" {
		t.Errorf("round trip: %q %v", k, err)
	}
}

func FuzzUnescape(f *testing.F) {
	for _, s := range []string{"a", "_2E", "x_2A_3E", "__", "_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := unescape(s)
		if err != nil {
			return
		}
		if escape(u) != s {
			t.Fatalf("unescape(%q) = %q, which escapes to %q", s, u, escape(u))
		}
	})
}

// TestThreeServers runs the conformance suite on a cluster of three NATS
// servers with JetStream replicas 3, each node on a different server.
func TestThreeServers(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-server JetStream cluster takes seconds to form")
	}
	// One NATS cluster for the whole suite; each test gets its own mew
	// cluster name, hence its own subjects and buckets.
	urls := threeServers(t)
	tests := 0
	clustertest.Run(t, func(t *testing.T, n int) *clustertest.Harness {
		tests++
		name := fmt.Sprintf("t%d", tests)
		h := &clustertest.Harness{}
		var nodes []*Node
		for i := range n {
			node := newReplicatedNode(t, urls[i%3], name, fmt.Sprintf("n%d", i))
			nodes = append(nodes, node)
			h.Nodes = append(h.Nodes, node)
		}
		h.Crash = func(i int) { nodes[i].crash() }
		return h
	})
}

// threeServers starts a NATS cluster of three servers with JetStream and
// returns their client URLs.
func threeServers(t testing.TB) []string {
	t.Helper()
	servers, err := StartServers(3, ServerOptions{StoreDir: t.TempDir(), ClusterName: "mewtest"})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for _, s := range servers {
		t.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
		urls = append(urls, s.ClientURL())
	}
	return urls
}

// newReplicatedNode connects a node with replicas 3, retrying while the
// JetStream cluster elects its leaders.
func newReplicatedNode(t testing.TB, url, clusterName, id string) *Node {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n, err := New(ctx, Options{NodeID: id, Cluster: clusterName, URL: url, PresenceTTL: clustertest.PresenceTTL, Replicas: 3, RequestTimeout: 3 * time.Second})
		cancel()
		if err == nil {
			t.Cleanup(func() { _ = n.Close() })
			return n
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestHostileFabric writes what no correct node writes, straight to the
// subjects and the bucket: the nodes skip it, answer errors, never panic.
func TestHostileFabric(t *testing.T) {
	s := startServer(t, ServerOptions{})
	a, b := newNode(t, s.ClientURL(), "a"), newNode(t, s.ClientURL(), "b")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := clustertest.SyncedWatch(ctx, t, b.State(), "sp")
	got := make(chan cluster.Message, 16)
	if _, err := b.Broker().Subscribe(ctx, "sp", func(m cluster.Message) { got <- m }); err != nil {
		t.Fatal(err)
	}
	followed := make(chan cluster.Record, 16)
	if _, err := b.Log().Follow(ctx, "sp", 0, func(r cluster.Record) { followed <- r }); err != nil {
		t.Fatal(err)
	}
	raw := a.nc
	bucket := "$KV." + stateBucket(DefaultCluster) + "."
	for _, k := range []string{"sp._zz", "sp._", "sp._41", "sp.a_2F", "sp"} {
		if _, err := a.js.Publish(ctx, bucket+k, []byte("x")); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	// Messages without a node, or with one that is no name.
	subj := subjectPrefix(DefaultCluster) + "sp"
	if err := raw.Publish(subj, []byte("anonymous")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.js.Publish(ctx, logSubject(DefaultCluster, "sp"), []byte("anonymous")); err != nil {
		t.Fatal(err)
	}
	// Then a correct write of each kind: it is the first thing seen.
	if _, err := a.State().Put(ctx, "sp", "ok", []byte("fine"), cluster.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Broker().Publish(ctx, "sp", []byte("fine")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Log().Append(ctx, "sp", []byte("fine")); err != nil {
		t.Fatal(err)
	}
	if e := clustertest.NextChange(t, w, 5*time.Second); e.Key != "ok" || string(e.Value) != "fine" {
		t.Fatalf("the watch delivered %+v", e)
	}
	select {
	case m := <-got:
		if string(m.Data) != "fine" {
			t.Fatalf("the broker delivered %q from %q", m.Data, m.Node)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no message")
	}
	select {
	case r := <-followed:
		if string(r.Data) != "fine" {
			t.Fatalf("the log delivered %q from %q", r.Data, r.Node)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no record")
	}
	// A claim key holding garbage reads as no claim; Get of it is fine.
	if _, err := a.js.Publish(ctx, bucket+kvKey("sp", cluster.FloorKey("m")), []byte("\x00garbage")); err != nil {
		t.Fatal(err)
	}
	win, _, err := cluster.ClaimFloor(ctx, b.State(), "sp", "m", cluster.Claim{Holder: "p", ID: "p", StartedAt: 1}, time.Minute, time.Now())
	if err != nil || win.Holder != "p" {
		t.Fatalf("claim over garbage: %+v %v", win, err)
	}
}

// TestFreshServer replaces the NATS server with one that has lost its
// storage: the nodes create the buckets and the stream again, and their
// watches go on with what is written from then on.
func TestFreshServer(t *testing.T) {
	s := startServer(t, ServerOptions{})
	port := s.Addr().(*net.TCPAddr).Port
	a, b := newNode(t, s.ClientURL(), "a"), newNode(t, s.ClientURL(), "b")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := clustertest.SyncedWatch(ctx, t, b.State(), "sp")
	if _, err := a.State().Put(ctx, "sp", "old", []byte("v"), cluster.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if e := clustertest.NextChange(t, w, 5*time.Second); e.Key != "old" {
		t.Fatalf("%+v", e)
	}
	s.Shutdown()
	s.WaitForShutdown()
	startServer(t, ServerOptions{Port: port}) // a new, empty store
	// The watch re-synchronizes: the lost key is reported deleted.
	if e := clustertest.NextChange(t, w, 15*time.Second); e.Op != cluster.OpDelete || e.Key != "old" {
		t.Fatalf("after the fresh start: %+v, want old's deletion", e)
	}
	// Then the marker: every change missed is handed on, at this epoch.
	if e := clustertest.NextChange(t, w, 15*time.Second); e.Op != cluster.OpResynced || e.Revision < 1 || e.Revision > b.Epoch() {
		t.Fatalf("%+v, want resynced at epoch %d", e, b.Epoch())
	}
	waitFor(t, 15*time.Second, "a write to the fresh server", func() bool {
		_, err := a.State().Put(ctx, "sp", "k", []byte("v"), cluster.PutOptions{})
		return err == nil
	})
	if e := clustertest.NextChange(t, w, 15*time.Second); e.Op != cluster.OpPut || e.Key != "k" {
		t.Fatalf("%+v, want k", e)
	}
}

// TestSmallMaxPayload: a NATS server that cannot carry the largest record
// is refused when the node starts, not when an envelope fails later.
func TestSmallMaxPayload(t *testing.T) {
	s := startServer(t, ServerOptions{MaxPayload: 1 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := New(ctx, Options{NodeID: "a", URL: s.ClientURL()})
	if !errors.Is(err, cluster.ErrInvalid) {
		if n != nil {
			n.Close()
		}
		t.Fatalf("New on a 1 MB max_payload: %v, want ErrInvalid", err)
	}
	t.Log(err)
}

// TestAskAgain: askAgain retries "no responders" (a NATS cluster electing a leader) within
// its bound and the context, and nothing else.
func TestAskAgain(t *testing.T) {
	ctx := context.Background()
	calls := 0
	got, err := askAgain(ctx, func() (int, error) {
		calls++
		if calls < 3 {
			return 0, fmt.Errorf("create consumer: %w", nats.ErrNoResponders)
		}
		return 7, nil
	})
	if got != 7 || err != nil || calls != 3 {
		t.Fatalf("after two refusals: %d, %v in %d calls", got, err, calls)
	}
	calls = 0
	other := errors.New("stream not found")
	if _, err := askAgain(ctx, func() (int, error) { calls++; return 0, other }); err != other || calls != 1 {
		t.Fatalf("another error: %v in %d calls, want it at once", err, calls)
	}
	calls = 0
	start := time.Now()
	if _, err := askAgain(ctx, func() (int, error) { calls++; return 0, nats.ErrNoResponders }); !errors.Is(err, nats.ErrNoResponders) || time.Since(start) > noResponderWait+time.Second {
		t.Fatalf("no answer ever: %v after %v", err, time.Since(start))
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	start = time.Now()
	if _, err := askAgain(cctx, func() (int, error) { return 0, nats.ErrNoResponders }); err == nil || time.Since(start) > noResponderWait/2 {
		t.Fatalf("a context ending: %v after %v", err, time.Since(start))
	}
}

// TestThreeServersReadYourWrites: on three servers with replicas 3, a
// record whose append was answered is in every read that starts after it,
// on any node: the server a read's consumer is made on may not have applied
// it yet (a replica outside the append's quorum), which a read made up for
// by asking the stream's leader for the tail (measured before: about 1 read
// in 100 came back without the record just appended).
func TestThreeServersReadYourWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-server JetStream cluster takes seconds to form")
	}
	urls := threeServers(t)
	nodes := []*Node{newReplicatedNode(t, urls[0], "ryw", "a"), newReplicatedNode(t, urls[1], "ryw", "b")}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var last uint64
	for i := range 300 {
		seq, err := nodes[0].History().Append(ctx, "sp", fmt.Appendf(nil, "r%d", i))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			recs, err := n.History().Read(ctx, "sp", last, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) == 0 || recs[len(recs)-1].Seq != seq {
				t.Fatalf("append %d (seq %d), then a read on %s: %d records", i, seq, n.id, len(recs))
			}
		}
		last = seq
	}
	// Nothing after the tail: answered without a consumer, empty.
	if recs, err := nodes[1].History().Read(ctx, "sp", last, 100); err != nil || len(recs) != 0 {
		t.Fatalf("a read after the tail: %v, %v", recs, err)
	}
}
