package gateway

// Fan-out of a space's envelopes through the cluster's Broker, and the
// holding of remote envelopes until the state they need has arrived.

import (
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
	"github.com/mew-protocol/mew/protocol"
)

// --- fan-out ---

// deliveredLocked puts d, delivered here, in the cluster's history when
// this node accepted or made it (cluster_history.go: once in the whole
// cluster), and sends a participant's envelope to the other nodes.
func (cl *clusterSpace) deliveredLocked(d delivery) {
	if !d.remote {
		cl.historyLocked(d)
	}
	if d.src != nil {
		cl.publishLocked(d)
	}
}

// resumeSkew: envelopes accepted on different nodes may have been
// delivered in another order on the node a resuming client left.
func (cl *clusterSpace) resumeSkew() time.Duration { return resumeSkew }

// speaksForLocked: the node m is connected to announces what the gateway
// does to it.
func (cl *clusterSpace) speaksForLocked(m *member) bool { return m.sess != nil }

// publishLocked sends an accepted envelope to the other nodes; mu must be
// held, so that the space's order of this node's senders is the order
// published.
func (cl *clusterSpace) publishLocked(d delivery) {
	if err := cl.node.Broker().Publish(cl.ctx, cl.sp.id, d.data); err != nil {
		cl.sp.srv.opts.Logger.Warn("cluster publish failed", "space", cl.sp.id, "id", d.id, "err", err)
		cl.sp.notSharedLocked([]published{{d.src, d.id}}, err)
		return
	}
	cl.confirms.Add(published{d.src, d.id})
}

// notShared tells the senders of a batch the fabric did not confirm.
func (cl *clusterSpace) notShared(batch []published, err error) {
	sp := cl.sp
	sp.srv.opts.Logger.Warn("cluster: publishes not confirmed; telling their senders", "space", sp.id, "envelopes", len(batch), "err", err)
	sp.mu.Lock()
	sp.notSharedLocked(batch, err)
	sp.mu.Unlock()
}

// heldEnvelope is an envelope from another node not yet delivered here.
type heldEnvelope struct {
	d    delivery
	sent time.Time // when its node published it, for the latency metric
}

// subscribe subscribes to the space's envelopes from the other nodes. Each
// subscription has its own decoder (its messages come one at a time) and
// generation: once replaced, its messages still in flight are dropped.
func (cl *clusterSpace) subscribe() error {
	sp := cl.sp
	sp.mu.Lock()
	cl.subGen++
	gen := cl.subGen
	sp.mu.Unlock()
	var dec protocol.Decoder
	sub, err := cl.node.Broker().Subscribe(cl.ctx, sp.id, func(msg cluster.Message) { cl.remoteEnvelope(&dec, gen, msg) })
	if err != nil {
		return err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if gen != cl.subGen || cl.ctx.Err() != nil {
		_ = sub.Unsubscribe() // replaced or closed meanwhile
		return nil
	}
	cl.sub = sub
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
func (cl *clusterSpace) diverged(gen uint64) {
	sp := cl.sp
	sp.mu.Lock()
	if gen != cl.subGen || cl.ctx.Err() != nil {
		sp.mu.Unlock()
		return
	}
	cl.behind.Store(true)
	cl.subGen++ // the old subscription's messages in flight are dropped
	old := cl.sub
	cl.sub = nil
	cl.held.DropLocked()
	sp.srv.metrics.clusterDiverged.Inc()
	sp.srv.opts.Logger.Warn("cluster: this node fell behind the space's envelopes (NATS dropped some); closing its connections to the space",
		"space", sp.id, "connections", len(sp.roster))
	sp.sendAwayLocked(websocket.StatusTryAgainLater, "this gateway node fell behind the cluster and missed envelopes: reconnect")
	sp.mu.Unlock()
	cl.wg.Go(func() {
		if old != nil {
			_ = old.Unsubscribe()
		}
		for cl.ctx.Err() == nil {
			err := cl.subscribe()
			if err == nil {
				cl.behind.Store(false)
				return
			}
			sp.srv.opts.Logger.Warn("cluster: subscribing again after falling behind", "space", sp.id, "err", err)
			select {
			case <-time.After(time.Second):
			case <-cl.ctx.Done():
			}
		}
	})
}

// remoteEnvelope delivers an envelope accepted by another node to the local
// participants, as the broadcast of a local one. It runs on the
// subscription's goroutine, one message at a time.
//
// A capability/grant or capability/revoke waits until this node's watch has
// applied the change it announces, and the envelopes after it wait behind
// it: as on one node, the grantee has its new capabilities before anyone
// reads the grant, and each sender's order is kept.
func (cl *clusterSpace) remoteEnvelope(dec *protocol.Decoder, gen uint64, msg cluster.Message) {
	if msg.Lost {
		cl.diverged(gen)
		return
	}
	if clusterlink.IsFrame(msg.Data) { // a stream's frame: cluster_streams.go
		cl.remoteFrame(msg)
		return
	}
	var env protocol.Envelope
	if err := dec.Decode(msg.Data, &env); err != nil {
		cl.sp.srv.opts.Logger.Warn("cluster: bad envelope from node", "space", cl.sp.id, "node", msg.Node, "err", err)
		return
	}
	sp := cl.sp
	h := heldEnvelope{d: delivery{data: msg.Data, id: env.ID, kind: env.Kind, at: sp.srv.now(), to: env.To, remote: true}, sent: msg.Sent}
	ready := sp.remoteReady(&env, cl.causeApplied)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if gen != cl.subGen {
		return // from a subscription given up after a divergence
	}
	if env.Kind == protocol.KindChat && sp.floorEnabled() {
		// Known addressed or not, so that a claim made here on it is
		// judged as on its node.
		sp.floor.note(env.ID, len(env.To) > 0)
	}
	cl.held.AddLocked(h, ready)
}

// releaseLocked delivers the held envelopes that may go now (after a
// change that may have made one ready); mu must be held.
func (cl *clusterSpace) releaseLocked() { cl.held.ReleaseLocked(false) }

// releaseHeld delivers a held envelope as the broadcast of a local one; mu
// is held.
func (cl *clusterSpace) releaseHeld(h heldEnvelope) {
	cl.sp.broadcastLocked(h.d, nil) // src is nil: never published again
	if !h.sent.IsZero() {
		cl.sp.srv.metrics.clusterLag.Observe(max(time.Since(h.sent), 0).Seconds())
	}
}
