package natscluster

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// Headers of a Broker message: the publishing node, and when it published
// (unix nanoseconds, by its clock), from which the receiving gateway
// measures cross-node latency.
const (
	headerNode = "Mew-Node"
	headerSent = "Mew-Sent"
)

// broker fans out on core NATS subjects, one per space. Core NATS keeps the
// order of one connection's messages to each subscriber, which is the
// per-sender order the interface promises; it stores nothing, so a node
// that is disconnected misses what was published meanwhile (its Err says
// so, and the gateway stops serving the space).
type broker struct{ n *Node }

func (b broker) subject(space string) string { return b.n.subjPre + escape(space) + suffixPublished }

func (b broker) Publish(_ context.Context, space string, data []byte) error {
	if err := cluster.CheckName(space); err != nil {
		return err
	}
	n := b.n
	if err := n.Err(); err != nil {
		return err
	}
	msg := &nats.Msg{Subject: b.subject(space), Data: data, Header: nats.Header{
		headerNode: []string{n.id}, headerSent: []string{strconv.FormatInt(time.Now().UnixNano(), 10)},
	}}
	if err := n.nc.PublishMsg(msg); err != nil {
		return fmt.Errorf("natscluster: publish to %s: %w", space, n.unavailable(err))
	}
	return nil
}

// Confirm implements cluster.Confirmer: a round trip to the NATS server,
// which has then read everything published before it.
func (b broker) Confirm(ctx context.Context) error {
	if err := b.n.Err(); err != nil {
		return err
	}
	if err := b.n.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("natscluster: confirm: %w", b.n.unavailable(err))
	}
	return nil
}

type subscription struct {
	n    *Node
	sub  *nats.Subscription
	once sync.Once
	// hmu makes the calls of h one at a time: the messages come from
	// nats.go's delivery goroutine, a Lost notice from its async error
	// goroutine.
	hmu  sync.Mutex
	h    func(cluster.Message)
	lost atomic.Bool
}

// deliver calls the handler with one message.
func (s *subscription) deliver(m cluster.Message) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	s.h(m)
}

// lose tells the handler, once, that NATS dropped messages for it.
func (s *subscription) lose() {
	if s.lost.CompareAndSwap(false, true) {
		s.deliver(cluster.Message{Lost: true})
	}
}

func (b broker) Subscribe(ctx context.Context, space string, h func(cluster.Message)) (cluster.Subscription, error) {
	if err := cluster.CheckName(space); err != nil {
		return nil, err
	}
	n := b.n
	if err := n.Err(); err != nil {
		return nil, err
	}
	s := &subscription{n: n, h: h}
	sub, err := n.nc.Subscribe(n.subjPre+escape(space)+".*", func(m *nats.Msg) {
		from := m.Header.Get(headerNode)
		if from == n.id || cluster.CheckName(from) != nil || m.Header.Get(headerOnly) != "" {
			return // our own (a connection without NoEcho), not a node's, or for the history alone
		}
		var sent time.Time
		if ns, err := strconv.ParseInt(m.Header.Get(headerSent), 10, 64); err == nil && ns > 0 {
			sent = time.Unix(0, ns)
		}
		s.deliver(cluster.Message{Node: from, Data: m.Data, Sent: sent})
	})
	if err != nil {
		return nil, fmt.Errorf("natscluster: subscribe to %s: %w", space, n.unavailable(err))
	}
	s.sub = sub
	if o := n.o; o.PendingMessages != 0 || o.PendingBytes != 0 {
		msgs, bytes := nats.DefaultSubPendingMsgsLimit, nats.DefaultSubPendingBytesLimit
		if o.PendingMessages > 0 {
			msgs = o.PendingMessages
		}
		if o.PendingBytes > 0 {
			bytes = o.PendingBytes
		}
		if err := sub.SetPendingLimits(msgs, bytes); err != nil {
			_ = sub.Unsubscribe()
			return nil, fmt.Errorf("natscluster: subscribe to %s: %w", space, err)
		}
	}
	// The interest must reach the server before Subscribe returns, or the
	// first messages published after it could miss this node.
	if err := n.nc.FlushTimeout(n.timeout); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("natscluster: subscribe to %s: %w", space, n.unavailable(err))
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		_ = sub.Unsubscribe()
		return nil, cluster.ErrClosed
	}
	n.subs[sub] = s
	n.mu.Unlock()
	context.AfterFunc(ctx, func() { _ = s.Unsubscribe() })
	return s, nil
}

func (s *subscription) Unsubscribe() error {
	var err error
	s.once.Do(func() {
		s.n.mu.Lock()
		delete(s.n.subs, s.sub)
		s.n.mu.Unlock()
		err = s.sub.Unsubscribe()
	})
	if err != nil && s.n.nc.IsClosed() {
		return nil
	}
	return err
}
