package clusterlink

// Fan-out of a space's envelopes through the cluster's Broker, and the
// holding of remote envelopes until the state they need has arrived.

import (
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterhist"
	"github.com/mew-protocol/mew/protocol"
)

// DeliveredLocked follows the local delivery of an envelope (data, at the
// node's time at): one this node accepted or made (not remote) goes to the
// cluster's history, once in the whole cluster; a participant's (sender
// set) is published to the other nodes, under the lock so that the
// space's order of this node's senders is the order published.
func (l *Link) DeliveredLocked(data []byte, id string, at time.Time, remote bool, sender string) {
	keep := !remote && l.opts.Hist != nil && len(data) <= l.opts.HistoryBytes && clusterhist.Fits(len(data)) // else not kept, as on a single node
	if sender == "" {
		if keep {
			l.opts.Hist.Push(l.space, at, data)
		}
		return
	}
	p := Published{Participant: sender, ID: id}
	if err := l.publish(data, at, keep); err != nil {
		l.log.Warn("cluster publish failed", "space", l.space, "id", id, "err", err)
		l.core.NotSharedLocked([]Published{p}, err)
		return
	}
	l.confirms.Add(p)
}

// publish sends a participant's envelope to the other nodes and, if keep,
// to the history: with one message when the node can (cluster.Keeper).
func (l *Link) publish(data []byte, at time.Time, keep bool) error {
	if keep {
		if shared, err := l.opts.Hist.Share(l.space, at, data); shared {
			return err
		}
		l.opts.Hist.Push(l.space, at, data)
	}
	return l.node.Broker().Publish(l.ctx, l.space, data)
}

// notShared tells the senders of a batch the fabric did not confirm.
func (l *Link) notShared(batch []Published, err error) {
	l.log.Warn("cluster: publishes not confirmed; telling their senders", "space", l.space, "envelopes", len(batch), "err", err)
	l.core.Lock()
	l.core.NotSharedLocked(batch, err)
	l.core.Unlock()
}

// subscribe subscribes to the space's envelopes from the other nodes. Each
// subscription has its own decoder (its messages come one at a time) and
// generation: once replaced, its messages still in flight are dropped.
func (l *Link) subscribe() error {
	l.core.Lock()
	l.subGen++
	gen := l.subGen
	l.core.Unlock()
	var dec protocol.Decoder
	sub, err := l.node.Broker().Subscribe(l.ctx, l.space, func(msg cluster.Message) { l.remoteEnvelope(&dec, gen, msg) })
	if err != nil {
		return err
	}
	l.core.Lock()
	defer l.core.Unlock()
	if gen != l.subGen || l.ctx.Err() != nil {
		_ = sub.Unsubscribe() // replaced or closed meanwhile
		return nil
	}
	l.sub = sub
	return nil
}

// diverged handles the fabric's notice that it dropped envelopes of the
// space for this node (a NATS slow consumer): its participants missed
// what the others delivered, which no later envelope repairs. So the node
// closes their connections with 1013 (try again later) and a reason, for
// them to reconnect — through the load balancer, likely to another node —
// and rejoin a consistent space; it drops the envelopes it held, leaves
// the space's fan-out (ending the subscription, and NATS's backlog with
// it), and subscribes again, refusing envelopes of the space until then.
func (l *Link) diverged(gen uint64) {
	l.core.Lock()
	if gen != l.subGen || l.ctx.Err() != nil {
		l.core.Unlock()
		return
	}
	l.behind.Store(true)
	l.subGen++ // the old subscription's messages in flight are dropped
	old := l.sub
	l.sub = nil
	l.held.DropLocked()
	if l.opts.Diverged != nil {
		l.opts.Diverged()
	}
	l.log.Warn("cluster: this node fell behind the space's envelopes (NATS dropped some); closing its connections to the space", "space", l.space)
	l.core.SendAwayLocked(websocket.StatusTryAgainLater, "this gateway node fell behind the cluster and missed envelopes: reconnect")
	l.core.Unlock()
	l.wg.Go(func() {
		if old != nil {
			_ = old.Unsubscribe()
		}
		for l.ctx.Err() == nil {
			err := l.subscribe()
			if err == nil {
				l.behind.Store(false)
				return
			}
			l.log.Warn("cluster: subscribing again after falling behind", "space", l.space, "err", err)
			select {
			case <-time.After(time.Second):
			case <-l.ctx.Done():
			}
		}
	})
}

// remoteEnvelope delivers an envelope accepted by another node to the local
// participants, as the broadcast of a local one. It runs on the
// subscription's goroutine, one message at a time.
//
// An envelope announcing a change (a grant, a revoke, a kick, a stream's
// request, a governed proposal) waits until this node has applied the
// change, and the envelopes after it wait behind it (Core.Ready): as on
// one node, the grantee has its new capabilities before anyone reads the
// grant, and each sender's order is kept.
func (l *Link) remoteEnvelope(dec *protocol.Decoder, gen uint64, msg cluster.Message) {
	if msg.Lost {
		l.diverged(gen)
		return
	}
	if IsFrame(msg.Data) {
		l.remoteFrame(msg)
		return
	}
	env := new(protocol.Envelope)
	if err := dec.Decode(msg.Data, env); err != nil {
		l.log.Warn("cluster: bad envelope from node", "space", l.space, "node", msg.Node, "err", err)
		return
	}
	ready := l.core.Ready(env, l.causeApplied)
	l.core.Lock()
	defer l.core.Unlock()
	if gen != l.subGen {
		return // from a subscription given up after a divergence
	}
	if env.Kind == protocol.KindChat {
		l.core.NoteChatLocked(env)
	}
	l.held.AddLocked(heldEnvelope{data: msg.Data, env: env, at: l.opts.Now(), sent: msg.Sent}, ready)
}

// releaseLocked delivers the held envelopes that may go now (after a
// change that may have made one ready).
func (l *Link) releaseLocked() { l.held.ReleaseLocked(false) }

// releaseHeld delivers a held envelope; the lock is held.
func (l *Link) releaseHeld(h heldEnvelope) {
	l.core.DeliverRemoteLocked(h.data, h.env, h.at)
	if !h.sent.IsZero() && l.opts.Lag != nil {
		l.opts.Lag(max(time.Since(h.sent), 0))
	}
}
