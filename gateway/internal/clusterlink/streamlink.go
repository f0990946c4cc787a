package clusterlink

// Streams across gateway nodes (docs/cluster.md, "Streams").
//
// A stream's state lives in every node's table of streams, each node
// enforcing its own copy as on one node. A change made on a node (open,
// writers granted or revoked, ownership transferred, a writer gone, close)
// is applied there at once and appended to the space's Log by the
// appender, in the order made; every other node's log follower applies it
// in the log's one order and then delivers the gateway's announcement of it
// (the same stream/open or stream/write-granted bytes). Stream numbers come
// from a counter in State (cluster.NextStreamNumber), so ids stay stream-1,
// stream-2... cluster-wide.
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

import (
	"context"
	"fmt"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/protocol"
)

// streamLink is a space's share of the cluster's streams.
type streamLink struct {
	origin string // this process's StreamChange.Origin
	follow cluster.Subscription
	app    *Appender[streamOp]
	frames *Frames

	// Guarded by the Core's lock:
	applied uint64            // the Seq of the last log record applied here
	causes  Causes            // ids of envelopes whose change is applied here
	seqs    map[string]uint64 // each open stream's last change in the log, for its frames
}

// streamOp names the stream a change or a frame in the appender's queue is
// of, and whether the change closes it.
type streamOp struct {
	id    string
	close bool
}

// startStreams replays the space's log (the streams open in the cluster),
// then follows it and starts the appender. It runs before the node serves
// the space: a welcome lists the cluster's open streams from the start.
func (l *Link) startStreams() error {
	s := &streamLink{origin: l.node.ID() + ":" + protocol.NewID(), seqs: make(map[string]uint64)}
	s.app = NewAppender(l.core, l.appendRecord, l.appended, l.publishFrameLocked)
	s.frames = NewFrames(l.core, FrameHoldLimit, func() uint64 { return s.applied }, l.deliverFrameLocked,
		func(f Frame) {
			l.log.Warn("cluster: a frame waited too long for the change it follows; dropped",
				"space", l.space, "seq", f.Seq, "applied", s.applied)
		})
	log := l.node.Log()
	var after uint64
	for {
		ctx, cancel := context.WithTimeout(l.ctx, OpTimeout)
		recs, err := log.Read(ctx, l.space, after, cluster.MaxReadLen)
		cancel()
		if err != nil {
			return fmt.Errorf("read the log after %d: %w", after, err)
		}
		l.core.Lock()
		for _, r := range recs {
			l.applyLocked(s, r, false)
		}
		l.core.Unlock()
		if len(recs) < cluster.MaxReadLen {
			break
		}
		after = recs[len(recs)-1].Seq
	}
	l.core.Lock()
	after = s.applied
	l.core.Unlock()
	sub, err := log.Follow(l.ctx, l.space, after, func(r cluster.Record) {
		l.core.Lock()
		defer l.core.Unlock()
		l.applyLocked(s, r, true)
	})
	if err != nil {
		return fmt.Errorf("follow the log: %w", err)
	}
	s.follow = sub
	l.core.Lock()
	l.streams = s
	l.core.Unlock()
	l.wg.Go(func() { s.app.Run(l.ctx) })
	return nil
}

// closeStreams lets the appender finish its queue (the closes of the
// streams whose owners Close disconnected) until ctx ends, and stops
// following the log. The appender itself ends with the Link's context.
func (l *Link) closeStreams(ctx context.Context) {
	l.core.Lock()
	s := l.streams
	var emptied <-chan struct{}
	if s != nil {
		s.frames.StopLocked() // frames from other nodes are ignored from now on
		emptied = s.app.EmptiedLocked()
	}
	l.core.Unlock()
	if s == nil {
		return
	}
	if emptied != nil {
		select {
		case <-emptied:
		case <-ctx.Done():
		}
	}
	_ = s.follow.Unsubscribe()
}

// StreamNumber takes the next stream number of the space in the cluster.
// Not called with the lock held: it waits for the fabric.
func (l *Link) StreamNumber() (uint64, error) {
	ctx, cancel := context.WithTimeout(l.ctx, OpTimeout)
	defer cancel()
	return cluster.NextStreamNumber(ctx, l.node.State(), l.space)
}

// StreamChangedLocked shares change c of a stream made here (its Stream
// holds the whole stream for an open, the owner for a transfer).
func (l *Link) StreamChangedLocked(c cluster.StreamChange) {
	s := l.streams
	if s == nil {
		return
	}
	c.Origin = s.origin
	b, err := cluster.EncodeStreamChange(c)
	if err != nil {
		// Only a request near the size limit gets here: the stream stays
		// this node's own.
		l.log.Error("cluster: stream change not shared", "space", l.space, "stream", c.Stream.ID, "err", err)
		return
	}
	s.app.ChangeLocked(b, streamOp{id: c.Stream.ID, close: c.Op == cluster.StreamOpClose})
}

// StreamFrameLocked sends a frame of stream id accepted here to the other
// nodes: at once when no change made here is waiting for the log, else
// behind those changes.
func (l *Link) StreamFrameLocked(id, writer string, frame []byte) {
	s := l.streams
	if s == nil {
		return
	}
	if !s.app.FrameLocked(streamOp{id: id}, writer, frame) {
		// The log has been slow for long (a failing append takes up to
		// OpTimeout): the other nodes miss this frame rather than this node
		// hold frames without bound.
		l.log.Warn("cluster: too many frames waiting for the log; dropped for the other nodes", "space", l.space, "stream", id)
	}
}

// publishFrameLocked publishes a frame under the lock, so that the other
// nodes get a node's frames and envelopes in the order it accepted them.
func (l *Link) publishFrameLocked(op streamOp, writer string, frame []byte) {
	if err := l.node.Broker().Publish(l.ctx, l.space, EncodeFrame(l.streams.seqs[op.id], writer, frame)); err != nil {
		l.log.Warn("cluster: frame not published", "space", l.space, "err", err)
	}
}

// appendRecord appends a stream change to the space's log (the appender's
// goroutine, no lock held).
func (l *Link) appendRecord(ctx context.Context, rec []byte) (uint64, error) {
	if err := l.node.Err(); err != nil {
		return 0, err
	}
	return l.node.Log().Append(ctx, l.space, rec)
}

// appended records where a change made here went in the log; the lock is
// held.
func (l *Link) appended(op streamOp, seq uint64, err error) {
	if err != nil {
		// The other nodes miss this change; the node's Err says why, and
		// the space refuses envelopes and frames until it is back.
		l.log.Error("cluster: stream change not appended", "space", l.space, "stream", op.id, "err", err)
	}
	if op.close {
		delete(l.streams.seqs, op.id)
		return
	}
	l.streams.seqs[op.id] = max(l.streams.seqs[op.id], seq)
}

// applyLocked applies a log record, if it is a stream change made by
// another process, and delivers its announcement when announce is set (not
// while catching up at start); then what waited for it goes.
func (l *Link) applyLocked(s *streamLink, r cluster.Record, announce bool) {
	if r.Seq <= s.applied {
		return
	}
	s.applied = r.Seq
	if cluster.IsStreamChange(r.Data) {
		c, err := cluster.DecodeStreamChange(r.Data)
		switch {
		case err != nil:
			l.log.Warn("cluster: bad stream change", "space", l.space, "seq", r.Seq, "node", r.Node, "err", err)
		case c.Origin != s.origin:
			note, open := l.core.ApplyStreamChangeLocked(c, announce)
			if note {
				s.causes.Note(c.Cause)
			}
			if open {
				s.seqs[c.Stream.ID] = r.Seq
			} else {
				delete(s.seqs, c.Stream.ID)
			}
		}
	}
	if announce {
		l.releaseLocked()
		if s.frames.Waiting() {
			s.frames.ReleaseLocked()
		}
	}
}

// causeApplied reports whether the change of the streams' log made by
// envelope id is applied here; the lock is held.
func (l *Link) causeApplied(id string) bool {
	return l.streams == nil || l.streams.causes.Has(id)
}

// remoteFrame takes a frame another node accepted: delivered at once if
// the record it follows is applied here, else held until it is. It runs on
// the Broker subscription's goroutine.
func (l *Link) remoteFrame(msg cluster.Message) {
	f, err := ParseFrame(msg.Data)
	if err != nil {
		l.log.Warn("cluster: bad frame from node", "space", l.space, "node", msg.Node, "err", err)
		return
	}
	l.core.Lock()
	defer l.core.Unlock()
	s := l.streams
	if s == nil {
		return
	}
	if !s.frames.AddLocked(f) {
		l.log.Warn("cluster: too many frames waiting for their stream's change; dropped", "space", l.space, "node", msg.Node)
	}
}

// deliverFrameLocked hands another node's frame to the core for the local
// connections the stream's frames go to.
func (l *Link) deliverFrameLocked(f Frame) {
	id, _, _ := protocol.ParseFrame(f.Data) // checked by ParseFrame
	l.core.DeliverFrameLocked(string(id), f.Writer, f.Data)
}
