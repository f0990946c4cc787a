package clusterlink_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterhist"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
	"github.com/mew-protocol/mew/protocol"
)

// core is a Core that records what the Link applies, for a space whose
// members are the keys of known.
type core struct {
	sync.Mutex
	known    map[string]bool
	events   []string
	ready    chan string
	delivery chan string
}

func newCore(members ...string) *core {
	c := &core{known: map[string]bool{}, ready: make(chan string, 64), delivery: make(chan string, 64)}
	for _, m := range members {
		c.known[m] = true
	}
	return c
}

func (c *core) note(e string) {
	c.events = append(c.events, e)
	select {
	case c.ready <- e:
	default:
	}
}

func (c *core) KnownLocked(p string) bool        { return c.known[p] }
func (c *core) HereLocked(string) (string, bool) { return "", false }
func (c *core) ConnectedLocked(string) bool      { return false }
func (c *core) ReplacedLocked(p string)          { c.note("replaced " + p) }
func (c *core) RemoteJoinedLocked(p string, _ protocol.ParticipantInfo, announce bool) {
	if announce {
		c.note("joined " + p)
	}
}
func (c *core) RemoteLeftLocked(p, _, _ string, _ bool) { c.note("left " + p) }
func (c *core) RemoteGrantLocked(rec cluster.Grant) (bool, bool) {
	if !c.known[rec.To] {
		return false, false
	}
	c.note("grant " + rec.To + "/" + rec.ID)
	return true, true
}
func (c *core) RemoteGrantGoneLocked(p, id string) (bool, bool) {
	if !c.known[p] {
		return false, false
	}
	c.note("revoke " + p + "/" + id)
	return true, true
}
func (c *core) RemoteControlLocked(ctl cluster.Control) bool {
	if !c.known[ctl.Participant] {
		return false
	}
	c.note("control " + ctl.Participant)
	return true
}
func (c *core) RemoteAliasLocked(a cluster.Alias) bool {
	c.note("alias " + a.ID)
	return c.known[a.Participant]
}
func (c *core) RemoteInviteLocked(inv cluster.Invite) bool {
	if c.known[inv.Participant] {
		return false
	}
	c.known[inv.Participant] = true
	c.note("invited " + inv.Participant)
	return true
}
func (c *core) RemoteGovernedLocked(cluster.Approval, bool) clusterlink.Governed {
	return clusterlink.NotGoverned
}
func (c *core) RemoteVoteLocked(cluster.ApprovalVote, bool) bool                { return true }
func (c *core) RemoteEndLocked(cluster.ApprovalEnd, bool) bool                  { return true }
func (c *core) FloorSetLocked(msg string, _ cluster.Claim)                      { c.note("floor " + msg) }
func (c *core) FloorGoneLocked(string, uint64)                                  {}
func (c *core) YieldLocked(msg string, _, _ cluster.Claim)                      { c.note("yield " + msg) }
func (c *core) NoteChatLocked(*protocol.Envelope)                               {}
func (c *core) ApplyStreamChangeLocked(cluster.StreamChange, bool) (bool, bool) { return true, true }
func (c *core) DeliverFrameLocked(string, string, []byte)                       {}
func (c *core) NotSharedLocked([]clusterlink.Published, error)                  {}
func (c *core) SendAwayLocked(websocket.StatusCode, string)                     {}
func (c *core) PrivateLocked(string, time.Time, uint64, int) ([]clusterhist.Entry, uint64) {
	return nil, 0
}

// Ready holds a grant's announcement until the grantee has it here.
func (c *core) Ready(env *protocol.Envelope, _ func(string) bool) func() bool {
	if env.Kind != protocol.KindCapabilityGrant {
		return nil
	}
	want := "grant bob/" + env.ID
	return func() bool {
		for _, e := range c.events {
			if e == want {
				return true
			}
		}
		return false
	}
}

func (c *core) DeliverRemoteLocked(_ []byte, env *protocol.Envelope, _ time.Time) {
	c.note("delivered " + env.Kind)
	c.delivery <- env.Kind
}

// chatGrant is alice's grant id of chat to bob, covered by her own.
func chatGrant(id string) cluster.Grant {
	chat := json.RawMessage(`{"kind":"chat"}`)
	return cluster.Grant{ID: id, To: "bob", From: "alice", Capabilities: []json.RawMessage{chat}, Links: []cluster.GrantLink{{Pattern: chat}}}
}

func link(t *testing.T, c clusterlink.Core, n cluster.Node) *clusterlink.Link {
	t.Helper()
	l, err := clusterlink.New(c, n, "s", clusterlink.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(context.Background()) })
	return l
}

func waitEvent(t *testing.T, c *core, want string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		c.Lock()
		for _, e := range c.events {
			if e == want {
				c.Unlock()
				return
			}
		}
		c.Unlock()
		select {
		case <-c.ready:
		case <-deadline:
			c.Lock()
			defer c.Unlock()
			t.Fatalf("no %q among %q", want, c.events)
		}
	}
}

// What one node shares the other applies through its Core; a change naming
// a participant not known yet waits for its invitation; the sharer does not
// apply its own echo.
func TestLinkSharesThroughCore(t *testing.T) {
	a, b := nodes(t)
	ca, cb := newCore("alice", "bob"), newCore("alice", "bob")
	la, _ := link(t, ca, a), link(t, cb, b)

	ca.Lock()
	la.GrantLocked(chatGrant("g1"), 0)
	la.ControlLocked(cluster.Control{Participant: "carol"}) // carol is invited below
	ca.Unlock()
	waitEvent(t, cb, "grant bob/g1")

	taken, started, err := la.ShareInvite(cluster.Invite{Participant: "carol", From: "alice", TokenHash: make([]byte, 32)})
	if taken || !started || err != nil {
		t.Fatalf("invite: taken %v started %v err %v", taken, started, err)
	}
	ca.Lock()
	ca.known["carol"] = true // admitted here, as the gateway does with the invitation it made
	la.InvitedLocked("carol", false)
	ca.Unlock()
	waitEvent(t, cb, "invited carol")
	waitEvent(t, cb, "control carol") // kept until carol was known, then applied

	ca.Lock()
	defer ca.Unlock()
	for _, e := range ca.events {
		if e == "grant bob/g1" || e == "invited carol" || e == "control carol" {
			t.Fatalf("the sharer applied its own echo: %q", ca.events)
		}
	}
}

// An envelope from another node announcing a grant is delivered only once
// the grant is in force here, and the envelopes after it wait behind it.
func TestLinkHoldsEnvelopeForItsChange(t *testing.T) {
	a, b := nodes(t)
	cb := newCore("alice", "bob")
	_ = link(t, cb, b)
	ctx := context.Background()
	grant := protocol.Envelope{Protocol: protocol.Version, ID: "g2", From: "alice", Kind: protocol.KindCapabilityGrant,
		Payload: json.RawMessage(`{"recipient":"bob","capabilities":[{"kind":"chat"}]}`)}
	chat := protocol.Envelope{Protocol: protocol.Version, ID: "c1", From: "alice", Kind: protocol.KindChat, Payload: json.RawMessage(`{"text":"hi"}`)}
	for _, env := range []protocol.Envelope{grant, chat} {
		data, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Broker().Publish(ctx, "s", data); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case k := <-cb.delivery:
		t.Fatalf("%s delivered before the grant was in force", k)
	case <-time.After(200 * time.Millisecond):
	}
	rec, _ := cluster.Encode(chatGrant("g2"))
	if _, err := a.State().Put(ctx, "s", cluster.GrantKey("bob", "g2"), rec, cluster.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{protocol.KindCapabilityGrant, protocol.KindChat} {
		select {
		case k := <-cb.delivery:
			if k != want {
				t.Fatalf("delivered %s, want %s", k, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s not delivered", want)
		}
	}
}

// Records a buggy or hostile node could store are refused before the core
// sees them: a grant under another participant's key, a control naming
// someone else, an alias under another id, an undecodable invitation.
func TestLinkRefusesMisfitRecords(t *testing.T) {
	a, b := nodes(t)
	cb := newCore("alice", "bob")
	_ = link(t, cb, b)
	ctx := context.Background()
	put := func(key string, v []byte) {
		t.Helper()
		if _, err := a.State().Put(ctx, "s", key, v, cluster.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	g, _ := cluster.Encode(cluster.Grant{ID: "g9", To: "alice", From: "bob"})
	put(cluster.GrantKey("bob", "g9"), g)
	ctl, _ := cluster.Encode(cluster.Control{Participant: "alice"})
	put(cluster.ControlKey("bob"), ctl)
	al, _ := cluster.Encode(cluster.Alias{ID: "x1", Participant: "bob"})
	put(cluster.AliasKey("x2"), al)
	put(cluster.InviteKey("mallory"), []byte("{not json"))
	// A sound change after them shows they were all read.
	good, _ := cluster.Encode(cluster.Control{Participant: "bob"})
	put(cluster.ControlKey("bob"), good)
	waitEvent(t, cb, "control bob")
	cb.Lock()
	defer cb.Unlock()
	if len(cb.events) != 1 {
		t.Fatalf("the core was handed misfit records: %q", cb.events)
	}
}
