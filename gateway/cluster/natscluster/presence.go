package natscluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// Presence lives in its own bucket whose MaxAge is the TTL: every refresh
// is a new write, so an entry lives TTL past its last refresh, and the
// bucket's limit markers let watches see the expiry as a deletion.

type presence struct{ n *Node }

func (p presence) TTL() time.Duration { return p.n.ttl }

func (p presence) Join(ctx context.Context, space string, m cluster.Member) error {
	n := p.n
	v, err := cluster.JoinRecord(space, n.id, m)
	if err != nil {
		return err
	}
	if err := n.Err(); err != nil {
		return err
	}
	rev, err := writeAgain(ctx, n, func() (uint64, error) { return n.pres.Put(ctx, kvKey(space, m.Participant), v) })
	if err != nil {
		return fmt.Errorf("natscluster: join %s in %s: %w", m.Participant, space, n.unavailable(err))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return cluster.ErrClosed
	}
	n.joined[joinKey{space, m.Participant}] = &joined{value: v, conn: m.Conn, rev: rev}
	return nil
}

func (p presence) Leave(ctx context.Context, space, participant, conn string) error {
	n := p.n
	if err := cluster.CheckName(space); err != nil {
		return err
	}
	if err := cluster.CheckName(participant); err != nil {
		return err
	}
	k := joinKey{space, participant}
	var rev uint64
	n.mu.Lock()
	if j := n.joined[k]; j != nil && j.conn == conn {
		rev = j.rev
		delete(n.joined, k)
	}
	n.mu.Unlock()
	return n.leave(ctx, space, participant, conn, rev)
}

// leave removes the presence entry of conn, written by this node at
// revision rev (0: not known).
func (n *Node) leave(ctx context.Context, space, participant, conn string, rev uint64) error {
	key := kvKey(space, participant)
	if rev != 0 {
		// Purge at the revision of our last write: a Get may be answered
		// by a replica that has not seen it (and would show an older
		// entry, or none), so it decides only when this fails.
		_, err := writeAgain(ctx, n, func() (struct{}, error) { return struct{}{}, n.pres.Purge(ctx, key, jetstream.LastRevision(rev)) })
		if err == nil {
			return nil
		}
		if !isConflict(err) {
			return fmt.Errorf("natscluster: leave %s: %w", participant, n.unavailable(err))
		}
	}
	e, err := n.pres.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("natscluster: leave %s: %w", participant, n.unavailable(err))
	}
	if m, err := cluster.DecodeMember(e.Value()); err == nil && m.Conn != conn {
		return nil // replaced by a newer connection: its entry stays
	}
	_, err = writeAgain(ctx, n, func() (struct{}, error) {
		return struct{}{}, n.pres.Purge(ctx, key, jetstream.LastRevision(e.Revision()))
	})
	if err != nil && !isConflict(err) {
		return fmt.Errorf("natscluster: leave %s: %w", participant, n.unavailable(err))
	}
	return nil
}

func (p presence) List(ctx context.Context, space string) ([]cluster.Member, error) {
	if err := cluster.CheckName(space); err != nil {
		return nil, err
	}
	// The bucket's leader has every change whose write was answered; the
	// server the watch reads from may not have applied the newest yet (a
	// replica outside their quorum), so the list goes on past its snapshot
	// until it has seen the leader's last change of the space, or for
	// catchUpWait at most (when that change was the delete of a key the
	// snapshot did not hold, no entry shows it).
	tail, err := p.tail(ctx, space)
	if err != nil {
		return nil, fmt.Errorf("natscluster: list %s: %w", space, p.n.unavailable(err))
	}
	w, err := p.Watch(ctx, space)
	if err != nil {
		return nil, err
	}
	defer w.Stop()
	byKey := map[string]cluster.Member{}
	var last uint64
	var deadline <-chan time.Time
	for {
		var e cluster.Entry
		var ok bool
		select {
		case e, ok = <-w.Changes():
		case <-deadline:
			return members(byKey), nil
		}
		if !ok {
			break
		}
		last = max(last, e.Revision)
		switch e.Op {
		case cluster.OpSynced:
			t := time.NewTimer(catchUpWait)
			defer t.Stop()
			deadline = t.C
		case cluster.OpDelete:
			delete(byKey, e.Key)
		case cluster.OpPut:
			if m, err := cluster.DecodeMember(e.Value); err == nil {
				byKey[e.Key] = m
			}
		}
		if deadline != nil && last >= tail {
			return members(byKey), nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("natscluster: list %s: %w", space, p.n.unavailable(cluster.ErrUnavailable))
}

// tail is the revision of the last change of space's presence the bucket's
// leader has, 0 when there is none.
func (p presence) tail(ctx context.Context, space string) (uint64, error) {
	st, err := p.n.js.Stream(ctx, "KV_"+presenceBucket(p.n.cluster))
	if err != nil {
		return 0, err
	}
	m, err := st.GetLastMsgForSubject(ctx, "$KV."+presenceBucket(p.n.cluster)+"."+escape(space)+".>")
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// members lists the entries of byKey, ordered by participant.
func members(byKey map[string]cluster.Member) []cluster.Member {
	out := make([]cluster.Member, 0, len(byKey))
	for _, m := range byKey {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b cluster.Member) int { return strings.Compare(a.Participant, b.Participant) })
	return out
}

func (p presence) Watch(ctx context.Context, space string) (cluster.Watcher, error) {
	return p.n.watch(ctx, p.n.pres, space)
}

// heartbeat refreshes this node's presence entries every third of the TTL,
// by compare-and-swap so that a refresh never overwrites a newer join on
// another node. An entry found replaced is forgotten; one found expired
// (the node was cut off from NATS for longer than the TTL while its
// participant stayed connected) is created again.
func (n *Node) heartbeat() {
	t := time.NewTicker(n.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		n.mu.Lock()
		batch := make(map[joinKey]joined, len(n.joined))
		for k, j := range n.joined {
			batch[k] = *j
		}
		n.mu.Unlock()
		for k, j := range batch {
			n.refresh(k, j)
		}
	}
}

func (n *Node) refresh(k joinKey, j joined) {
	ctx, cancel := context.WithTimeout(n.ctx, n.timeout)
	defer cancel()
	key := kvKey(k.space, k.participant)
	rev, err := writeAgain(ctx, n, func() (uint64, error) { return n.pres.Update(ctx, key, j.value, j.rev) })
	if isConflict(err) {
		e, gerr := n.pres.Get(ctx, key)
		switch {
		case errors.Is(gerr, jetstream.ErrKeyNotFound):
			rev, err = writeAgain(ctx, n, func() (uint64, error) { return n.pres.Create(ctx, key, j.value) })
		case gerr == nil:
			if m, derr := cluster.DecodeMember(e.Value()); derr == nil && m.Conn == j.conn {
				rev, err = e.Revision(), nil
				break
			}
			n.forget(k, j.conn)
			return
		default:
			err = gerr
		}
	}
	if err != nil {
		return // NATS is away: Err says so; the next tick tries again
	}
	n.mu.Lock()
	if cur := n.joined[k]; cur != nil && cur.conn == j.conn {
		cur.rev = rev
	}
	n.mu.Unlock()
}

func (n *Node) forget(k joinKey, conn string) {
	n.mu.Lock()
	if cur := n.joined[k]; cur != nil && cur.conn == conn {
		delete(n.joined, k)
	}
	n.mu.Unlock()
}
