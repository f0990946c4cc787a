package gateway

// Streams across gateway nodes (docs/cluster.md, "Streams").
//
// A stream's state lives in every node's streamTable, each node enforcing
// its own copy as on one node. A change made on a node (open, writers
// granted or revoked, ownership transferred, a writer gone, close) is
// applied there at once, as before, and appended to the space's Log by this
// file's appender goroutine, in the order made; every other node's log
// follower applies it in the log's one order and then delivers the
// gateway's announcement of it (the same stream/open or
// stream/write-granted bytes). Stream numbers come from a counter in State
// (cluster.NextStreamNumber), so ids stay stream-1, stream-2... cluster-wide.
//
// Binary frames cross nodes on the Broker, tagged with the Seq of the last
// change of their stream the accepting node had applied: a receiving node
// holds a frame until its follower has applied that record, so a writer's
// grant, a transfer or the stream's open is in force on every node before
// the frames that follow it. A node publishes a frame only once the changes
// it made before it are in the log (the frame waits in the appender's
// queue behind them). The accepting node checks the writer, as on one
// node; a receiving node trusts it (nodes are one gateway) but delivers
// only frames of a stream it knows, to the stream's targets.
//
// Lock order: liveSpace.mu only; the appender and the follower take it to
// apply what they did.

import (
	"context"
	"fmt"
	"net/http"
	"slices"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
	"github.com/mew-protocol/mew/protocol"
)

// clusterStreams is a space's share of the cluster's streams; the
// mechanics (the appender's queue, frames held for their record, the
// causes applied) are gateway/internal/clusterlink's.
type clusterStreams struct {
	cl     *clusterSpace
	origin string // this process's StreamChange.Origin
	follow cluster.Subscription
	app    *clusterlink.Appender[*stream]
	frames *clusterlink.Frames

	// Guarded by liveSpace.mu:
	closing bool               // set by closeStreams: frames from other nodes are ignored
	applied uint64             // the Seq of the last log record applied here
	causes  clusterlink.Causes // ids of envelopes whose change is applied here
}

// startStreams replays the space's log (the streams open in the cluster),
// then follows it and starts the appender. It runs before the node serves
// the space: a welcome lists the cluster's open streams from the start.
func (cl *clusterSpace) startStreams() error {
	sp := cl.sp
	cs := &clusterStreams{cl: cl, origin: cl.node.ID() + ":" + protocol.NewID()}
	cs.app = clusterlink.NewAppender(&sp.mu, cs.appendRecord, cs.appended, cs.publishFrameLocked)
	cs.frames = clusterlink.NewFrames(&sp.mu, clusterlink.FrameHoldLimit, func() uint64 { return cs.applied }, cs.deliverFrameLocked,
		func(f clusterlink.Frame) {
			sp.srv.opts.Logger.Warn("cluster: a frame waited too long for the change it follows; dropped",
				"space", sp.id, "seq", f.Seq, "applied", cs.applied)
		})
	log := cl.node.Log()
	var after uint64
	for {
		ctx, cancel := context.WithTimeout(cl.ctx, clusterlink.OpTimeout)
		recs, err := log.Read(ctx, sp.id, after, cluster.MaxReadLen)
		cancel()
		if err != nil {
			return fmt.Errorf("read the log after %d: %w", after, err)
		}
		sp.mu.Lock()
		for _, r := range recs {
			cs.applyLocked(r, false)
		}
		sp.mu.Unlock()
		if len(recs) < cluster.MaxReadLen {
			break
		}
		after = recs[len(recs)-1].Seq
	}
	sp.mu.Lock()
	after = cs.applied
	sp.mu.Unlock()
	sub, err := log.Follow(cl.ctx, sp.id, after, cs.record)
	if err != nil {
		return fmt.Errorf("follow the log: %w", err)
	}
	cs.follow = sub
	sp.mu.Lock()
	cl.streams = cs
	sp.mu.Unlock()
	cl.wg.Go(func() { cs.app.Run(cl.ctx) })
	return nil
}

// closeStreams lets the appender finish its queue (the closes of the
// streams whose owners Close disconnected) until ctx ends, and stops
// following the log. The appender itself ends with cl.ctx.
func (cl *clusterSpace) closeStreams(ctx context.Context) {
	sp := cl.sp
	sp.mu.Lock()
	cs := cl.streams
	var emptied <-chan struct{}
	if cs != nil {
		cs.closing = true
		emptied = cs.app.EmptiedLocked()
	}
	sp.mu.Unlock()
	if cs == nil {
		return
	}
	if emptied != nil {
		select {
		case <-emptied:
		case <-ctx.Done():
		}
	}
	_ = cs.follow.Unsubscribe()
	sp.mu.Lock()
	cs.frames.StopLocked()
	sp.mu.Unlock()
}

// --- changes made here ---

// streamNumber takes the next stream number of the space in the cluster,
// once check passes.
func (cl *clusterSpace) streamNumber(check func() *refusal) (uint64, *refusal) {
	if rf := check(); rf != nil {
		return 0, rf
	}
	ctx, cancel := context.WithTimeout(cl.ctx, clusterlink.OpTimeout)
	defer cancel()
	n, err := cluster.NextStreamNumber(ctx, cl.node.State(), cl.sp.id)
	if err != nil {
		r := refuse(ErrorClusterUnavailable, "cannot number the stream in the cluster: "+err.Error())
		r.status = http.StatusServiceUnavailable
		return 0, r
	}
	return n, nil
}

// streamChangedLocked shares a change of st made here: op, the writers
// before it (for writers and transfer), the id of the participant's
// envelope that made it (cause), and the gateway's announcement of it, if
// any; mu must be held.
func (cl *clusterSpace) streamChangedLocked(op string, st *stream, before []string, cause string, announce []byte) {
	c := cluster.StreamChange{Op: op, Stream: streamRecord(op, st), Cause: cause, Announce: announce}
	if op == cluster.StreamOpWriters || op == cluster.StreamOpTransfer {
		for _, w := range before {
			if !slices.Contains(st.writers, w) {
				c.Remove = append(c.Remove, w)
			}
		}
		for _, w := range st.writers {
			if !slices.Contains(before, w) {
				c.Add = append(c.Add, w)
			}
		}
	}
	cl.streamChangeLocked(c, st)
}

// streamChangeLocked queues change c of st for the appender; mu must be
// held.
func (cl *clusterSpace) streamChangeLocked(c cluster.StreamChange, st *stream) {
	cs := cl.streams
	if cs == nil {
		return
	}
	c.Origin = cs.origin
	b, err := cluster.EncodeStreamChange(c)
	if err != nil {
		// Only a request near the size limit gets here: the stream stays
		// this node's own.
		cl.sp.srv.opts.Logger.Error("cluster: stream change not shared", "space", cl.sp.id, "stream", st.id, "err", err)
		return
	}
	cs.app.ChangeLocked(b, st)
}

// streamFrameLocked sends a frame accepted here to the other nodes: at
// once when no change made here is waiting for the log, else behind those
// changes; mu must be held.
func (cl *clusterSpace) streamFrameLocked(st *stream, writer string, frame []byte) {
	cs := cl.streams
	if cs == nil {
		return
	}
	if !cs.app.FrameLocked(st, writer, frame) {
		// The log has been slow for long (a failing append takes up to
		// clusterlink.OpTimeout): the other nodes miss this frame rather
		// than this node hold frames without bound.
		cl.sp.srv.opts.Logger.Warn("cluster: too many frames waiting for the log; dropped for the other nodes", "space", cl.sp.id, "stream", st.id)
	}
}

// publishFrameLocked publishes a frame under mu, so that the other nodes
// get a node's frames and envelopes in the order it accepted them.
func (cs *clusterStreams) publishFrameLocked(st *stream, writer string, frame []byte) {
	cl := cs.cl
	if err := cl.node.Broker().Publish(cl.ctx, cl.sp.id, clusterlink.EncodeFrame(st.logSeq, writer, frame)); err != nil {
		cl.sp.srv.opts.Logger.Warn("cluster: frame not published", "space", cl.sp.id, "err", err)
	}
}

// appendRecord appends a stream change to the space's log (the appender's
// goroutine, no lock held).
func (cs *clusterStreams) appendRecord(ctx context.Context, rec []byte) (uint64, error) {
	if err := cs.cl.node.Err(); err != nil {
		return 0, err
	}
	return cs.cl.node.Log().Append(ctx, cs.cl.sp.id, rec)
}

// appended records where st's change went in the log; mu is held.
func (cs *clusterStreams) appended(st *stream, seq uint64, err error) {
	if err != nil {
		// The other nodes miss this change; the node's Err says why,
		// and the space refuses envelopes and frames until it is back.
		cs.cl.sp.srv.opts.Logger.Error("cluster: stream change not appended", "space", cs.cl.sp.id, "stream", st.id, "err", err)
	}
	st.logSeq = max(st.logSeq, seq)
}

// --- changes made elsewhere ---

// record applies a record the follower delivers.
func (cs *clusterStreams) record(r cluster.Record) {
	sp := cs.cl.sp
	sp.mu.Lock()
	defer sp.mu.Unlock()
	cs.applyLocked(r, true)
}

// applyLocked applies a log record, if it is a stream change made by
// another process, and delivers its announcement when announce is set (not
// while catching up at start); then what waited for it goes. mu must be
// held.
func (cs *clusterStreams) applyLocked(r cluster.Record, announce bool) {
	if r.Seq <= cs.applied {
		return
	}
	cs.applied = r.Seq
	if cluster.IsStreamChange(r.Data) {
		c, err := cluster.DecodeStreamChange(r.Data)
		switch {
		case err != nil:
			cs.cl.sp.srv.opts.Logger.Warn("cluster: bad stream change", "space", cs.cl.sp.id, "seq", r.Seq, "node", r.Node, "err", err)
		case c.Origin != cs.origin:
			cs.changeLocked(c, r.Seq, announce)
		}
	}
	if announce {
		cs.cl.releaseLocked()
		if cs.frames.Waiting() {
			cs.frames.ReleaseLocked()
		}
	}
}

// changeLocked applies another node's change c, the log's record seq,
// through the core, and remembers that its cause is applied.
func (cs *clusterStreams) changeLocked(c cluster.StreamChange, seq uint64, announce bool) {
	if cs.cl.sp.applyStreamChangeLocked(c, seq, announce) {
		cs.causes.Note(c.Cause)
	}
}

// causeApplied reports whether the change of State or of the streams' log
// made by envelope id is applied here; mu must be held.
func (cl *clusterSpace) causeApplied(id string) bool {
	return cl.streams == nil || cl.streams.causes.Has(id)
}

// remoteMemberLocked returns the member id names if it is connected on
// another node (by its logical name or its runtime id there), or nil; mu
// must be held.
func (cl *clusterSpace) remoteMemberLocked(id string) *member {
	if r, ok := cl.remote[id]; ok {
		return cl.sp.members[r.Participant]
	}
	for _, r := range cl.remote {
		if r.RuntimeID == id {
			return cl.sp.members[r.Participant]
		}
	}
	return nil
}

// --- frames from other nodes ---

// remoteFrame takes a frame another node accepted: delivered at once if
// the record it follows is applied here, else held until it is. It runs on
// the Broker subscription's goroutine.
func (cl *clusterSpace) remoteFrame(msg cluster.Message) {
	sp := cl.sp
	f, err := clusterlink.ParseFrame(msg.Data)
	if err != nil {
		sp.srv.opts.Logger.Warn("cluster: bad frame from node", "space", sp.id, "node", msg.Node, "err", err)
		return
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	cs := cl.streams
	if cs == nil || cs.closing {
		return
	}
	if !cs.frames.AddLocked(f) {
		sp.srv.opts.Logger.Warn("cluster: too many frames waiting for their stream's change; dropped", "space", sp.id, "node", msg.Node)
	}
}

// deliverFrameLocked queues another node's frame for the local connections
// the stream's frames go to (see streamFrame). A frame of a stream not
// open here is dropped: its close is applied, or it never existed.
func (cs *clusterStreams) deliverFrameLocked(f clusterlink.Frame) {
	sp := cs.cl.sp
	id, _, _ := protocol.ParseFrame(f.Data) // checked by ParseFrame
	st := sp.streams.byID[string(id)]
	if st == nil {
		sp.srv.opts.Logger.Debug("cluster: frame of a stream not open here; dropped", "space", sp.id, "stream", string(id))
		return
	}
	sp.deliverFrameLocked(st, frame{data: f.Data, binary: true, src: sp.members[f.Writer]})
}
