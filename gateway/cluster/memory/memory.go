package memory

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// DefaultPresenceTTL is the presence TTL when Options leave it 0.
const DefaultPresenceTTL = 10 * time.Second

// Options configure a Cluster.
type Options struct {
	// PresenceTTL is how long the presence of a crashed node's participants
	// outlives it (see Cluster.Crash). 0: DefaultPresenceTTL.
	PresenceTTL time.Duration
	// LogRetention is how many records each space's Log keeps. 0:
	// DefaultLogRetention.
	LogRetention int
	// HistoryRetention and HistoryBytes bound each space's History: that
	// many records, and that many bytes of them. 0: DefaultHistoryRetention
	// and DefaultHistoryBytes.
	HistoryRetention, HistoryBytes int
}

// Cluster is the shared memory of the nodes created from it, as a NATS
// server is for networked nodes. Its state outlives its nodes; Close ends
// the watches and timers of all of them.
type Cluster struct {
	ttl      time.Duration
	state    *kv
	presence *kv
	logs     *spaceLogs
	history  *spaceLogs

	mu    sync.Mutex
	subs  map[string]map[*subscription]struct{} // by space
	nodes map[string]*Node
}

// New returns an empty Cluster.
func New(o Options) *Cluster {
	ttl := o.PresenceTTL
	if ttl <= 0 {
		ttl = DefaultPresenceTTL
	}
	keep := o.LogRetention
	if keep <= 0 {
		keep = DefaultLogRetention
	}
	hkeep, hbytes := o.HistoryRetention, o.HistoryBytes
	if hkeep <= 0 {
		hkeep = DefaultHistoryRetention
	}
	if hbytes <= 0 {
		hbytes = DefaultHistoryBytes
	}
	return &Cluster{
		ttl: ttlRound(ttl), state: newKV(), presence: newKV(),
		logs: newSpaceLogs(keep, 0), history: newSpaceLogs(hkeep, hbytes),
		subs: make(map[string]map[*subscription]struct{}), nodes: make(map[string]*Node),
	}
}

// Node returns a new node of c with the given id, which must be unique
// among c's open nodes.
func (c *Cluster) Node(id string) (*Node, error) {
	if err := cluster.CheckName(id); err != nil {
		return nil, fmt.Errorf("memory: node id: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.nodes[id]; dup {
		return nil, fmt.Errorf("memory: node %s already open: %w", id, cluster.ErrInvalid)
	}
	n := &Node{c: c, id: id, subs: make(map[*subscription]struct{})}
	c.nodes[id] = n
	return n, nil
}

// Crash stops node id as a SIGKILL would: its subscriptions and watches
// end, it leaves nothing gracefully, and its participants' presence
// expires after the TTL, as if it had stopped refreshing it.
func (c *Cluster) Crash(id string) {
	c.mu.Lock()
	n := c.nodes[id]
	c.mu.Unlock()
	if n != nil {
		n.shutdown(false)
	}
}

// Close closes every node and ends every watch and timer.
func (c *Cluster) Close() error {
	c.mu.Lock()
	nodes := make([]*Node, 0, len(c.nodes))
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	for _, n := range nodes {
		n.shutdown(true)
	}
	c.state.closeAll()
	c.presence.closeAll()
	return nil
}

// Node is a node of a memory Cluster.
type Node struct {
	c  *Cluster
	id string

	isClosed atomic.Bool // closed, for Err without the lock

	mu        sync.Mutex
	closed    bool
	subs      map[*subscription]struct{}
	watchers  []cluster.Watcher
	followers []*follower
}

var (
	_ cluster.Node     = (*Node)(nil)
	_ cluster.Broker   = broker{}
	_ cluster.State    = state{}
	_ cluster.Presence = presence{}
)

// ID implements cluster.Node.
func (n *Node) ID() string { return n.id }

// Broker implements cluster.Node.
func (n *Node) Broker() cluster.Broker { return broker{n} }

// State implements cluster.Node.
func (n *Node) State() cluster.State { return state{n} }

// Log implements cluster.Node.
func (n *Node) Log() cluster.Log { return logView{n, n.c.logs} }

// History implements cluster.Node.
func (n *Node) History() cluster.Log { return logView{n, n.c.history} }

// Presence implements cluster.Node.
func (n *Node) Presence() cluster.Presence { return presence{n} }

// Err implements cluster.Node: a memory node is always connected.
func (n *Node) Err() error {
	if n.isClosed.Load() {
		return cluster.ErrClosed
	}
	return nil
}

// Close implements cluster.Node: it ends the node's subscriptions and
// watches and removes its participants' presence.
func (n *Node) Close() error {
	n.shutdown(true)
	return nil
}

func (n *Node) shutdown(graceful bool) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	n.isClosed.Store(true)
	subs, ws, fs := n.subs, n.watchers, n.followers
	n.subs, n.watchers, n.followers = nil, nil, nil
	n.mu.Unlock()
	for _, f := range fs {
		_ = f.Unsubscribe()
	}

	c := n.c
	c.mu.Lock()
	delete(c.nodes, n.id)
	c.mu.Unlock()
	for s := range subs {
		s.unsubscribe()
	}
	for _, w := range ws {
		w.Stop()
	}
	p := c.presence
	p.mu.Lock()
	for _, sp := range p.spaces {
		for key, it := range sp.keys {
			if it.owner != n.id {
				continue
			}
			if graceful {
				p.deleteLocked(sp, key)
			} else if it.timer == nil {
				p.expireLocked(sp, key, it, c.ttl)
			}
		}
	}
	p.mu.Unlock()
}

func (n *Node) track(w cluster.Watcher) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return cluster.ErrClosed
	}
	n.watchers = append(n.watchers, w)
	return nil
}

// broker fans out through the Cluster's subscription table.
type broker struct{ n *Node }

type subscription struct {
	n     *Node
	space string
	q     *queue[cluster.Message]
	once  sync.Once
}

func (b broker) Publish(_ context.Context, space string, data []byte) error {
	n := b.n
	if err := cluster.CheckName(space); err != nil {
		return err
	}
	if err := n.Err(); err != nil {
		return err
	}
	msg := cluster.Message{Node: n.id, Data: data, Sent: time.Now()}
	c := n.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for s := range c.subs[space] {
		if s.n != n {
			s.q.push(msg)
		}
	}
	return nil
}

func (b broker) Subscribe(ctx context.Context, space string, h func(cluster.Message)) (cluster.Subscription, error) {
	n := b.n
	if err := cluster.CheckName(space); err != nil {
		return nil, err
	}
	s := &subscription{n: n, space: space}
	s.q = newQueue(func(m cluster.Message) {
		// Each subscriber gets its own copy: the publisher keeps its slice.
		m.Data = clone(m.Data)
		h(m)
	}, func() {})
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		s.q.close(true)
		s.q.wait()
		return nil, cluster.ErrClosed
	}
	n.subs[s] = struct{}{}
	n.mu.Unlock()
	c := n.c
	c.mu.Lock()
	if c.subs[space] == nil {
		c.subs[space] = make(map[*subscription]struct{})
	}
	c.subs[space][s] = struct{}{}
	c.mu.Unlock()
	context.AfterFunc(ctx, func() { _ = s.Unsubscribe() })
	return s, nil
}

// Unsubscribe ends the subscription; messages already queued are dropped.
func (s *subscription) Unsubscribe() error {
	s.n.mu.Lock()
	delete(s.n.subs, s)
	s.n.mu.Unlock()
	s.unsubscribe()
	return nil
}

func (s *subscription) unsubscribe() {
	s.once.Do(func() {
		c := s.n.c
		c.mu.Lock()
		delete(c.subs[s.space], s)
		if len(c.subs[s.space]) == 0 {
			delete(c.subs, s.space)
		}
		c.mu.Unlock()
		s.q.close(true)
	})
	s.q.wait()
}

// state is a node's view of the Cluster's State.
type state struct{ n *Node }

func checkSK(space, key string) error {
	if err := cluster.CheckName(space); err != nil {
		return err
	}
	return cluster.CheckKey(key)
}

func (s state) Get(_ context.Context, space, key string) (cluster.Entry, error) {
	if err := checkSK(space, key); err != nil {
		return cluster.Entry{}, err
	}
	if err := s.n.Err(); err != nil {
		return cluster.Entry{}, err
	}
	return s.n.c.state.get(space, key)
}

func (s state) Put(_ context.Context, space, key string, value []byte, o cluster.PutOptions) (uint64, error) {
	if err := checkSK(space, key); err != nil {
		return 0, err
	}
	if err := s.n.Err(); err != nil {
		return 0, err
	}
	return s.n.c.state.put(space, key, value, o, "")
}

func (s state) Delete(_ context.Context, space, key string, ifRevision uint64) error {
	if err := checkSK(space, key); err != nil {
		return err
	}
	if err := s.n.Err(); err != nil {
		return err
	}
	return s.n.c.state.delete(space, key, ifRevision, nil)
}

func (s state) Watch(ctx context.Context, space string) (cluster.Watcher, error) {
	return s.n.watch(ctx, s.n.c.state, space)
}

func (n *Node) watch(ctx context.Context, store *kv, space string) (cluster.Watcher, error) {
	if err := cluster.CheckName(space); err != nil {
		return nil, err
	}
	if err := n.Err(); err != nil {
		return nil, err
	}
	w, err := store.watch(ctx, space)
	if err != nil {
		return nil, err
	}
	if err := n.track(w); err != nil {
		w.Stop()
		return nil, err
	}
	return w, nil
}

// presence keeps entries alive for as long as their node is open: a
// memory node cannot die without Crash or Close saying so.
type presence struct{ n *Node }

func (p presence) TTL() time.Duration { return p.n.c.ttl }

func (p presence) Join(_ context.Context, space string, m cluster.Member) error {
	v, err := cluster.JoinRecord(space, p.n.id, m)
	if err != nil {
		return err
	}
	if err := p.n.Err(); err != nil {
		return err
	}
	_, err = p.n.c.presence.put(space, m.Participant, v, cluster.PutOptions{}, p.n.id)
	return err
}

func (p presence) Leave(_ context.Context, space, participant, conn string) error {
	if err := cluster.CheckName(space); err != nil {
		return err
	}
	if err := p.n.Err(); err != nil {
		return err
	}
	return p.n.c.presence.delete(space, participant, 0, func(it *item) bool {
		m, err := cluster.DecodeMember(it.value)
		return err == nil && m.Conn == conn
	})
}

func (p presence) List(_ context.Context, space string) ([]cluster.Member, error) {
	if err := cluster.CheckName(space); err != nil {
		return nil, err
	}
	if err := p.n.Err(); err != nil {
		return nil, err
	}
	store := p.n.c.presence
	store.mu.Lock()
	defer store.mu.Unlock()
	var out []cluster.Member
	if sp := store.spaces[space]; sp != nil {
		for _, it := range sp.keys {
			m, err := cluster.DecodeMember(it.value)
			if err != nil {
				continue
			}
			out = append(out, m)
		}
	}
	return out, nil
}

func (p presence) Watch(ctx context.Context, space string) (cluster.Watcher, error) {
	return p.n.watch(ctx, p.n.c.presence, space)
}

var _ cluster.Keeper = broker{}

// Keep implements cluster.Keeper: the history's append and the publish, one
// after the other under the caller's order; done is called before it
// returns.
func (b broker) Keep(ctx context.Context, space string, prefix, data []byte, share bool, done func(error)) error {
	n := b.n
	if err := cluster.CheckKeep(space, prefix, data); err != nil {
		return err
	}
	if err := n.Err(); err != nil {
		return err
	}
	rec := make([]byte, 0, len(prefix)+len(data))
	if _, err := n.History().Append(ctx, space, append(append(rec, prefix...), data...)); err != nil {
		return err
	}
	if share {
		if err := b.Publish(ctx, space, data); err != nil {
			return err
		}
	}
	done(nil)
	return nil
}
