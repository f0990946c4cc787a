package clusterlink_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
	"github.com/mew-protocol/mew/protocol"
)

// On a NATS node, what was published and reached the server is confirmed
// (nothing handed back); with the server gone, the batch is handed back
// with the reason.
func TestConfirms(t *testing.T) {
	srv, err := natscluster.StartServer(natscluster.ServerOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.WaitForShutdown()
	defer srv.Shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	n, err := natscluster.New(ctx, natscluster.Options{NodeID: "a", URL: srv.ClientURL()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Close() }()
	if clusterlink.NewConfirms[int](n.Broker(), func() uint64 { return 0 }) == nil {
		t.Fatal("a NATS broker cannot confirm")
	}
	c := clusterlink.NewConfirms[int](n.Broker(), n.Epoch)
	failed := make(chan []int, 4)
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx, func(b []int, err error) { failed <- b }) })
	defer func() { cancel(); wg.Wait() }()

	for i := range 3 {
		if err := n.Broker().Publish(ctx, "s", []byte(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
		c.Add(i)
	}
	select {
	case b := <-failed:
		t.Fatalf("confirmed publishes handed back: %v", b)
	case <-time.After(10 * clusterlink.ConfirmGather):
	}
	srv.Shutdown()
	c.Add(7)
	select {
	case b := <-failed:
		if len(b) != 1 || b[0] != 7 {
			t.Fatalf("handed back %v, want [7]", b)
		}
	case <-time.After(3 * clusterlink.OpTimeout / 2):
		t.Fatal("a publish the server never confirmed was not handed back")
	}
}

// The memory fabric cannot confirm: no Confirms, and Add on nil is a no-op.
func TestConfirmsNone(t *testing.T) {
	a, _ := nodes(t)
	c := clusterlink.NewConfirms[int](a.Broker(), func() uint64 { return 0 })
	if c != nil {
		t.Fatal("the memory broker claims to confirm")
	}
	c.Add(1)
}

func TestNewer(t *testing.T) {
	at := time.Unix(100, 0)
	a := cluster.Member{Conn: "a:1", Since: at}
	b := cluster.Member{Conn: "b:1", Since: at}
	c := cluster.Member{Conn: "a:0", Since: at.Add(time.Millisecond)}
	if !clusterlink.Newer(b, a) || clusterlink.Newer(a, b) {
		t.Fatal("a tie is not broken by Conn the same way both ways")
	}
	if !clusterlink.Newer(c, b) || clusterlink.Newer(b, c) {
		t.Fatal("the later connection is not the newer")
	}
}

// A welcome lists other nodes' participants by name, with their own info,
// or their ids when the info is unreadable (a hostile or broken node's).
func TestRemoteInfos(t *testing.T) {
	info, _ := json.Marshal(protocol.ParticipantInfo{ID: "rt-1", Capabilities: []json.RawMessage{json.RawMessage(`{"kind":"chat"}`)}})
	r := clusterlink.Remote{
		"zed":  {Participant: "zed", Info: info},
		"amy":  {Participant: "amy", RuntimeID: "amy-2", Info: []byte(`{"id":`)},
		"bob":  {Participant: "bob", Info: []byte(`{"id":""}`)},
		"here": {Participant: "here", Info: info},
	}
	got := r.Infos(func(name string) bool { return name == "here" })
	var ids []string
	for _, p := range got {
		ids = append(ids, p.ID)
	}
	if want := "amy-2 bob rt-1"; strings.Join(ids, " ") != want {
		t.Fatalf("listed %v, want %s", ids, want)
	}
	if len(got[2].Capabilities) != 1 {
		t.Fatalf("zed's capabilities lost: %+v", got[2])
	}
}
