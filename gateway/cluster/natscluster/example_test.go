package natscluster_test

import (
	"context"
	"fmt"
	"os"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/cluster/natscluster"
)

// Two gateway nodes on an embedded NATS server: a grant written by one is
// seen by the other's watch, which is how the second comes to enforce it.
func Example() {
	dir, err := os.MkdirTemp("", "mew-nats-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	srv, err := natscluster.StartServer(natscluster.ServerOptions{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	defer srv.WaitForShutdown()
	defer srv.Shutdown()

	ctx := context.Background()
	a, err := natscluster.New(ctx, natscluster.Options{NodeID: "a", URL: srv.ClientURL()})
	if err != nil {
		panic(err)
	}
	defer a.Close()
	b, err := natscluster.New(ctx, natscluster.Options{NodeID: "b", URL: srv.ClientURL()})
	if err != nil {
		panic(err)
	}
	defer b.Close()

	w, err := b.State().Watch(ctx, "demo")
	if err != nil {
		panic(err)
	}
	defer w.Stop()

	g, _ := cluster.Encode(cluster.Grant{ID: "g1", To: "agent", From: "human",
		Capabilities: nil})
	if _, err := a.State().Put(ctx, "demo", cluster.GrantKey("agent", "g1"), g, cluster.PutOptions{}); err != nil {
		panic(err)
	}
	for e := range w.Changes() {
		if e.Op != cluster.OpPut {
			continue
		}
		grant, err := cluster.DecodeGrant(e.Value)
		fmt.Println(e.Key, grant.From, "→", grant.To, err)
		break
	}
	// Output: grant/agent/g1 human → agent <nil>
}
