package natscluster

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// A space's envelopes travel on two subjects under one prefix:
// mew.<cluster>.space.<space>.p for what is published only (Broker.Publish:
// stream frames, envelopes too large to keep) and mew.<cluster>.space.<space>.k
// for what the history's stream captures (Keep, and the history's own
// appends). A Broker subscription follows mew.<cluster>.space.<space>.*, one
// subscription, so the two keep one order; it passes over the messages
// marked for the history alone.
const (
	suffixPublished = ".p"
	suffixKept      = ".k"
	// headerPrefix carries Keep's prefix, hex, for the history's readers:
	// subscribers get the envelope alone.
	headerPrefix = "Mew-Prefix"
	// headerOnly marks a message for the history alone ("history"):
	// subscribers never see it.
	headerOnly  = "Mew-Only"
	onlyHistory = "history"
)

// keepMaxPending bounds the keeps whose acknowledgement is awaited, far
// above what a gateway's history writer lets wait, so that Keep never
// stalls for room (it is called under a space's lock).
const keepMaxPending = 1 << 20

var _ cluster.Keeper = broker{}

// Keep implements cluster.Keeper: one JetStream publish on the space's kept
// subject, which the history's stream stores and, unless it is for the
// history alone, the other nodes' subscriptions receive. Its
// acknowledgement calls done.
func (b broker) Keep(_ context.Context, space string, prefix, data []byte, share bool, done func(error)) error {
	if err := cluster.CheckKeep(space, prefix, data); err != nil {
		return err
	}
	n := b.n
	if err := n.Err(); err != nil {
		return err
	}
	h := nats.Header{headerNode: []string{n.id}}
	if len(prefix) > 0 {
		h[headerPrefix] = []string{hex.EncodeToString(prefix)}
	}
	if share {
		h[headerSent] = []string{strconv.FormatInt(time.Now().UnixNano(), 10)}
	} else {
		h[headerOnly] = []string{onlyHistory}
	}
	msg := &nats.Msg{Subject: n.subjPre + escape(space) + suffixKept, Data: data, Header: h}
	// Registered first: the acknowledgement may come before PublishMsgAsync returns.
	if !n.keeps.add(msg, done) {
		return cluster.ErrClosed
	}
	// No retries: a publish sent again would reach the subscribers twice.
	if _, err := n.keepJS.PublishMsgAsync(msg, jetstream.WithRetryAttempts(0)); err != nil {
		n.keeps.take(msg)
		return fmt.Errorf("natscluster: keep in %s: %w", space, n.unavailable(err))
	}
	return nil
}

// keeps are the Keep calls waiting for their acknowledgement.
type keeps struct {
	mu      sync.Mutex
	pending map[*nats.Msg]func(error) // guarded by mu
	closed  bool                      // guarded by mu: failAll was called
}

// add registers m's callback; false once the node is closing.
func (k *keeps) add(m *nats.Msg, done func(error)) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return false
	}
	if k.pending == nil {
		k.pending = make(map[*nats.Msg]func(error))
	}
	k.pending[m] = done
	return true
}

// take removes m's callback and returns it (nil if already taken).
func (k *keeps) take(m *nats.Msg) func(error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	done := k.pending[m]
	delete(k.pending, m)
	return done
}

// settle calls m's callback, if it is still waiting, with err.
func (k *keeps) settle(m *nats.Msg, err error) {
	if done := k.take(m); done != nil {
		done(err)
	}
}

// failAll calls every waiting callback with err: the node is closing and
// their acknowledgements will not come.
func (k *keeps) failAll(err error) {
	k.mu.Lock()
	pending := k.pending
	k.pending, k.closed = nil, true
	k.mu.Unlock()
	for _, done := range pending {
		done(err)
	}
}

// keepJetStream is the JetStream context of Keep, whose acknowledgements
// and failures (a timeout, a reconnection, a refusal) settle the keeps.
func (n *Node) keepJetStream() (jetstream.JetStream, error) {
	return jetstream.New(n.nc, jetstream.WithDefaultTimeout(n.o.RequestTimeout),
		jetstream.WithPublishAsyncTimeout(n.o.RequestTimeout),
		jetstream.WithPublishAsyncMaxPending(keepMaxPending),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
			n.keeps.settle(m, nil)
		}),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			n.keeps.settle(m, fmt.Errorf("natscluster: keep: %w", n.unavailable(err)))
		}))
}

// keptRecord gives a history record its prefix back from the header a
// Keep put it in; ok is false for a header another node wrote wrongly.
func keptRecord(h nats.Header, data []byte) ([]byte, bool) {
	p := h.Get(headerPrefix)
	if p == "" {
		return data, true
	}
	if len(p) > 2*cluster.MaxKeepPrefix {
		return nil, false
	}
	prefix, err := hex.DecodeString(p)
	if err != nil || len(prefix)+len(data) > cluster.MaxRecordLen {
		return nil, false
	}
	return append(prefix, data...), true
}
