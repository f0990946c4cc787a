package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/internal/testutil"
)

// TestClusterGrantRecords: what a node does with grant records it reads
// from the cluster's State. A record whose provenance does not hold (bob
// grants what he does not hold) is refused, never enforced. A record that
// names a parent this node has not seen yet (a child's record can arrive
// before its parent's latest one) waits: it allows nothing and is not
// deleted, and once the parent arrives it is enforced.
func TestClusterGrantRecords(t *testing.T) {
	for _, b := range []backend{onMemory, onNATS} {
		t.Run(string(b), func(t *testing.T) {
			c := newTestCluster(t, 2, b, clusterSpace, nil)
			carol, _ := testutil.Join(t, c.gs[1].WSURL, "carol-token")
			st := c.nodes[0].State()
			put := func(g cluster.Grant) {
				t.Helper()
				v, err := cluster.Encode(g)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := st.Put(context.Background(), "shared", cluster.GrantKey(g.To, g.ID), v, cluster.PutOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			request := json.RawMessage(`{"kind":"mcp/request"}`)
			canRequest := func(id string) bool {
				return outcome(t, carol, id, `{"id":"`+id+`","kind":"mcp/request","to":["human"],"payload":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}`) == nil
			}

			// Forged: bob holds chat only, yet the record says his static
			// {"kind":"*"} covered it.
			put(cluster.Grant{ID: "forged", To: "carol", From: "bob", At: time.Now(), Capabilities: []json.RawMessage{request},
				Links: []cluster.GrantLink{{Pattern: json.RawMessage(`{"kind":"*"}`)}}})
			time.Sleep(300 * time.Millisecond) // the watch delivers it; nothing may change
			if canRequest("r1") {
				t.Fatal("a forged grant record was enforced")
			}

			// A child before its parent.
			put(cluster.Grant{ID: "child", To: "carol", From: "bob", At: time.Now(), Capabilities: []json.RawMessage{request},
				Links: []cluster.GrantLink{{Pattern: request, Grant: "parent"}}})
			time.Sleep(300 * time.Millisecond)
			if canRequest("r2") {
				t.Fatal("a grant whose parent is unknown was enforced")
			}
			if _, err := st.Get(context.Background(), "shared", cluster.GrantKey("carol", "child")); errors.Is(err, cluster.ErrNotFound) {
				t.Fatal("the waiting child's record was deleted")
			}
			put(cluster.Grant{ID: "parent", To: "bob", From: "human", At: time.Now(),
				Capabilities: []json.RawMessage{request, json.RawMessage(`{"kind":"capability/grant"}`)},
				Links:        []cluster.GrantLink{{Pattern: json.RawMessage(`{"kind":"*"}`)}, {Pattern: json.RawMessage(`{"kind":"*"}`)}}})
			carol.Within(10*time.Second, "carol's welcome with mcp/request", func(m testutil.Msg) bool {
				return m.Kind() == "system/welcome" && holdsKind(m, "mcp/request")
			})
			if !canRequest("r3") {
				t.Fatal("the child was not enforced once its parent arrived")
			}
		})
	}
}
