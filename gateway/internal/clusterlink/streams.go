package clusterlink

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// Limits of the streams' share of the cluster.
const (
	// FrameHoldLimit bounds how long a frame from another node waits for
	// the log record it follows. A record in the log reaches every
	// follower within milliseconds; a frame still waiting after this
	// claims a record that does not exist and is dropped.
	FrameHoldLimit = 5 * time.Second
	// MaxHeldFrames bounds the frames waiting; more are dropped.
	MaxHeldFrames = 4096
	// MaxQueuedFrames bounds the frames accepted here waiting for this
	// node's changes to reach the log before they go to the other nodes.
	MaxQueuedFrames = 4096
	// CauseMemory is how many envelope ids of applied changes a node
	// remembers (Causes).
	CauseMemory = 1024
)

// frameTag starts a frame's Broker message (an envelope starts with '{'):
// tag, uvarint Seq, uvarint length and writer, then the frame "#id#data".
const frameTag = 0x00

// ErrBadFrame is a frame message that does not parse.
var ErrBadFrame = errors.New("malformed frame message")

// Frame is a stream's frame as it crosses nodes: the Seq of the last change
// of its stream the accepting node had applied, its writer's logical name,
// and the frame ("#id#data").
type Frame struct {
	Seq    uint64
	Writer string
	Data   []byte
	since  time.Time // when it was held
}

// IsFrame reports whether a Broker message is a frame (not an envelope).
func IsFrame(msg []byte) bool { return len(msg) > 0 && msg[0] == frameTag }

// EncodeFrame makes the Broker message of a frame.
func EncodeFrame(seq uint64, writer string, frame []byte) []byte {
	msg := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(writer)+len(frame))
	msg = append(msg, frameTag)
	msg = binary.AppendUvarint(msg, seq)
	msg = binary.AppendUvarint(msg, uint64(len(writer)))
	return append(append(msg, writer...), frame...)
}

// ParseFrame reads a Broker message made by EncodeFrame, the frame itself
// checked as a client's would be.
func ParseFrame(msg []byte) (Frame, error) {
	if !IsFrame(msg) {
		return Frame{}, ErrBadFrame
	}
	b := msg[1:]
	seq, n := binary.Uvarint(b)
	if n <= 0 {
		return Frame{}, ErrBadFrame
	}
	b = b[n:]
	wl, n := binary.Uvarint(b)
	if n <= 0 || wl > uint64(len(b)-n) {
		return Frame{}, ErrBadFrame
	}
	b = b[n:]
	f := Frame{Seq: seq, Writer: string(b[:wl]), Data: b[wl:]}
	if _, _, err := protocol.ParseFrame(f.Data); err != nil {
		return Frame{}, fmt.Errorf("%w: %w", ErrBadFrame, err)
	}
	return f, nil
}

// Frames holds frames from other nodes until the log record each follows
// is applied here: a frame's Seq never decreases along one node's frames
// of one stream, so each stream's order is kept, while a frame claiming a
// record that never comes holds up no other and is dropped after
// FrameHoldLimit.
//
// Frames is guarded by its owner's lock, which every method's caller holds
// and which the timer takes.
type Frames struct {
	lock    sync.Locker
	limit   time.Duration
	applied func() uint64 // the Seq of the last record applied here; lock held
	deliver func(Frame)   // lock held
	dropped func(Frame)   // told of one dropped at its limit; lock held
	held    []Frame       // in arrival order
	timer   *time.Timer
	stopped bool
}

// NewFrames returns an empty Frames.
func NewFrames(lock sync.Locker, limit time.Duration, applied func() uint64, deliver, dropped func(Frame)) *Frames {
	return &Frames{lock: lock, limit: limit, applied: applied, deliver: deliver, dropped: dropped}
}

// AddLocked delivers f if its record is applied here, else holds it; it
// reports false when f was dropped because too many wait.
func (fs *Frames) AddLocked(f Frame) bool {
	if fs.stopped {
		return true
	}
	if f.Seq <= fs.applied() {
		// Frames held before it are of other streams, or of records not
		// applied yet: this one's stream keeps its order.
		fs.deliver(f)
		return true
	}
	if len(fs.held) >= MaxHeldFrames {
		return false
	}
	f.since = time.Now()
	fs.held = append(fs.held, f)
	if fs.timer == nil {
		fs.timer = time.AfterFunc(fs.limit, fs.expire)
	}
	return true
}

// Waiting reports whether frames are held.
func (fs *Frames) Waiting() bool { return len(fs.held) > 0 }

// ReleaseLocked delivers the held frames whose record is applied now, in
// their order, and drops those held past the limit.
func (fs *Frames) ReleaseLocked() {
	now := time.Now()
	applied := fs.applied()
	kept := fs.held[:0]
	for _, f := range fs.held {
		switch {
		case f.Seq <= applied:
			fs.deliver(f)
		case now.Sub(f.since) >= fs.limit:
			fs.dropped(f)
		default:
			kept = append(kept, f)
		}
	}
	clear(fs.held[len(kept):])
	fs.held = kept
	if fs.timer != nil {
		fs.timer.Stop()
		fs.timer = nil
	}
	if len(kept) > 0 && !fs.stopped {
		fs.timer = time.AfterFunc(fs.limit-now.Sub(kept[0].since), fs.expire)
	}
}

func (fs *Frames) expire() {
	fs.lock.Lock()
	defer fs.lock.Unlock()
	if fs.stopped {
		return
	}
	fs.timer = nil
	fs.ReleaseLocked()
}

// StopLocked drops what is held and ignores frames from now on.
func (fs *Frames) StopLocked() {
	fs.stopped = true
	if fs.timer != nil {
		fs.timer.Stop()
		fs.timer = nil
	}
	fs.held = nil
}

// Causes remembers the ids of the last CauseMemory envelopes whose change
// is applied here, so that another node's copy of such an envelope,
// arriving after its change, is delivered at once. Guarded by its owner's
// lock.
type Causes struct {
	set  map[string]struct{}
	ring []string // the ids, oldest first, to forget them
}

// Note remembers id ("" is ignored).
func (c *Causes) Note(id string) {
	if id == "" {
		return
	}
	if _, ok := c.set[id]; ok {
		return
	}
	if c.set == nil {
		c.set = make(map[string]struct{})
	}
	if len(c.ring) >= CauseMemory {
		delete(c.set, c.ring[0])
		c.ring[0] = ""
		c.ring = c.ring[1:]
	}
	c.set[id] = struct{}{}
	c.ring = append(c.ring, id)
}

// Has reports whether id's change is applied here.
func (c *Causes) Has(id string) bool {
	_, ok := c.set[id]
	return ok
}

// Appender appends a space's stream changes made here to the cluster's log
// from one goroutine, in the order made, and publishes the frames accepted
// here behind the changes made before them, once those are in: a writer's
// grant, a transfer or the stream's open is in force on every node before
// the frames that follow it. S is the gateway's stream.
//
// Its queue is guarded by its owner's lock, which ChangeLocked and
// FrameLocked are called with and the goroutine takes.
type Appender[S any] struct {
	lock sync.Locker
	wake chan struct{}
	// append appends a record to the log (no lock held); appended records
	// its Seq for s (lock held); publish publishes a frame of s (lock held).
	append   func(ctx context.Context, rec []byte) (uint64, error)
	appended func(s S, seq uint64, err error)
	publish  func(s S, writer string, frame []byte)

	queue   []appendOp[S] // guarded by lock
	emptied chan struct{} // closed when the queue empties; guarded by lock
}

type appendOp[S any] struct {
	rec    []byte // a change to append; nil for a frame
	s      S
	writer string
	frame  []byte
}

// NewAppender returns an Appender; Run is its goroutine.
func NewAppender[S any](lock sync.Locker, appendRec func(context.Context, []byte) (uint64, error), appended func(S, uint64, error), publish func(S, string, []byte)) *Appender[S] {
	return &Appender[S]{lock: lock, wake: make(chan struct{}, 1), append: appendRec, appended: appended, publish: publish}
}

// ChangeLocked queues the record of a change of s.
func (a *Appender[S]) ChangeLocked(rec []byte, s S) {
	a.queue = append(a.queue, appendOp[S]{rec: rec, s: s})
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// FrameLocked publishes a frame of s at once when no change is waiting for
// the log, else queues it behind them. It reports false when the frame was
// dropped: MaxQueuedFrames wait already (the log has been slow for long).
func (a *Appender[S]) FrameLocked(s S, writer string, frame []byte) bool {
	switch {
	case len(a.queue) >= MaxQueuedFrames:
		return false
	case len(a.queue) > 0:
		a.queue = append(a.queue, appendOp[S]{s: s, writer: writer, frame: frame})
	default:
		a.publish(s, writer, frame)
	}
	return true
}

// EmptiedLocked returns a channel closed when the queue is empty, or nil
// when it is already.
func (a *Appender[S]) EmptiedLocked() <-chan struct{} {
	if len(a.queue) == 0 {
		return nil
	}
	if a.emptied == nil {
		a.emptied = make(chan struct{})
	}
	return a.emptied
}

// Run appends and publishes until ctx ends. A change whose append fails is
// reported to appended with the error, and the frames behind it go on.
func (a *Appender[S]) Run(ctx context.Context) {
	for {
		a.lock.Lock()
		for len(a.queue) > 0 && a.queue[0].rec == nil {
			op := a.queue[0]
			a.queue[0] = appendOp[S]{}
			a.queue = a.queue[1:]
			a.publish(op.s, op.writer, op.frame)
		}
		if len(a.queue) == 0 {
			if a.emptied != nil {
				close(a.emptied)
				a.emptied = nil
			}
			a.lock.Unlock()
			select {
			case <-a.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		op := a.queue[0] // stays queued, so frames keep waiting behind it
		a.lock.Unlock()

		actx, cancel := context.WithTimeout(ctx, OpTimeout)
		seq, err := a.append(actx, op.rec)
		cancel()
		a.lock.Lock()
		a.appended(op.s, seq, err)
		a.queue[0] = appendOp[S]{}
		a.queue = a.queue[1:]
		a.lock.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
}
