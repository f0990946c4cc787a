package gateway

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/protocol"
)

// Transports, as the audit log names them.
const (
	transportWebSocket = "websocket"
	transportHTTP      = "http"
	transportVirtual   = "virtual"
)

// frame is one outbound message. data is shared by every recipient of a
// broadcast and must never be modified.
type frame struct {
	data   []byte
	binary bool
	src    *member // the participant that sent it; nil for the gateway's own
	// addressed: the recipient is among the envelope's addressees, or it is
	// a private answer; someone may be waiting on it, so it ends the
	// writer's gathering (Options.Timing.WriteCoalesce).
	addressed bool
	// lazy: no one waits on it (a presence), so a writer with nothing else
	// queued holds it up to lazyCoalesce, gathering more: a burst of joins
	// then costs each connection a write per window, not one per join.
	lazy bool
}

// lazyCoalesce is how long lazy frames alone wait for company. A presence
// arriving that much later changes nothing for anyone.
const lazyCoalesce = 25 * time.Millisecond

// sink is where a session's frames end up: a WebSocket or an output_log file.
type sink interface {
	// write writes a batch of frames, in order.
	write(ctx context.Context, fs []frame) error
	// idle is called when the queue has drained, so that a buffered sink
	// can flush.
	idle() error
	// close ends the sink with a close code and reason.
	close(code websocket.StatusCode, reason string)
}

// session is one connection of a participant: a WebSocket, or the file of an
// output_log participant that the gateway connects itself.
//
// Ownership: the writer goroutine (run) owns the sink's writing side; for a
// WebSocket the connection's handler goroutine owns reading and, when it
// ends, removes the session from its space. kill may be called from any
// goroutine, including with the space lock held: it never blocks and takes
// no lock but closeOnce.
type session struct {
	sp        *liveSpace
	m         *member
	id        string // runtime participant id
	transport string
	// linkConn names the connection in the cluster's presence (the space's
	// link gave it at join; "" on one node). Guarded by liveSpace.mu.
	linkConn string

	q    outq
	done chan struct{} // closed by kill

	closeOnce   sync.Once
	closeCode   websocket.StatusCode
	closeReason string

	sink     sink
	ctx      context.Context // cancelled when the writer has finished
	cancel   context.CancelFunc
	finished chan struct{} // closed when the writer has returned

	// The writer goroutine runs only while there is something to write (see
	// wakeWriter): an idle connection holds no goroutine of its own.
	writerOn atomic.Bool

	// Pings of a silent WebSocket peer run from a timer, not a goroutine.
	pingMu      sync.Mutex
	pingTimer   *time.Timer // nil until startPings
	pingStopped bool        // set when the writer has finished
	pinging     sync.WaitGroup
	ping        func(context.Context) error

	// resume is the id of the last envelope the client saw before it
	// reconnected (the resume query parameter), or "": attach replays what
	// came after it (space.go, replayLocked).
	resume string

	dropped    atomic.Int64 // messages shed for this peer since it was last told
	lastDrop   atomic.Int64 // unix nanoseconds of the last messages_dropped notice
	flooding   atomic.Int64 // messages of this sender shed for some peer since it was last told
	writing    atomic.Int64 // monotonic nanoseconds at which the current write began; 0 when idle
	lastSeen   atomic.Int64 // unix nanoseconds of the last message or pong from the peer
	lastRateEr atomic.Int64 // unix nanoseconds of the last rate_limited answer
	lastFlood  atomic.Int64 // unix nanoseconds of the last notice to this sender that it was shed
}

func newSession(sp *liveSpace, m *member, id, transport string, queue, queueBytes int, sk sink) *session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{
		sp: sp, m: m, id: id, transport: transport,
		q:        outq{limit: queue, maxBytes: queueBytes, wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1), eager: make(chan struct{}, 1)},
		done:     make(chan struct{}),
		sink:     sk,
		ctx:      ctx,
		cancel:   cancel,
		finished: make(chan struct{}),
	}
	s.lastSeen.Store(sp.srv.now().UnixNano())
	return s
}

// enqueue queues f for the peer without blocking, and reports whether it
// did. A full queue means the peer does not keep up. When one sender fills
// it (see outq.push), that sender's messages are shed for this peer and
// both are told; otherwise the peer is killed as a slow consumer, so that
// nobody else ever waits for it.
func (s *session) enqueue(f frame) bool {
	select {
	case <-s.done:
		return false
	default:
	}
	shed, ok := s.q.push(f)
	if ok {
		s.wakeWriter()
	}
	switch {
	case ok && shed == nil:
		return true
	case shed != nil:
		s.sp.srv.metrics.shed.Inc()
		s.dropped.Add(1)
		if ss := shed.sess; ss != nil { // the caller holds the space's lock
			ss.flooding.Add(1)
		}
		return ok
	}
	s.sp.srv.metrics.slowConsumers.Inc()
	s.abort(websocket.StatusTryAgainLater, "slow consumer")
	return false
}

// kill marks the session as ending with the given close code. The writer
// closes the sink; the owner then removes the session from its space.
func (s *session) kill(code websocket.StatusCode, reason string) {
	s.closeOnce.Do(func() {
		s.closeCode, s.closeReason = code, reason
		close(s.done)
		s.wakeWriter() // which closes the sink
	})
}

// abort kills the session and drops its connection at once, without a
// close handshake: for peers that do not read (slow, silent or stuck), whose
// handshake would only time out. Cancelling the context also aborts a write
// blocked on a full socket, so the others see the peer leave now.
func (s *session) abort(code websocket.StatusCode, reason string) {
	s.kill(code, reason)
	s.cancel()
}

// writerLinger is how long a writer goroutine waits for more to write
// before it exits: long enough that a busy connection keeps one, short
// enough that an idle one soon holds none.
const writerLinger = 250 * time.Millisecond

// run starts the session's writing side, with ping (if not nil) pinging a
// silent peer, and returns once the session has ended and its sink is
// closed.
func (s *session) run(ping func(context.Context) error) {
	s.startPings(ping)
	s.wakeWriter()
	<-s.finished
}

// wakeWriter makes sure a writer goroutine runs, to write what is queued or
// to close the sink once the session is killed. It never blocks.
func (s *session) wakeWriter() {
	if s.writerOn.CompareAndSwap(false, true) {
		go s.write()
	}
}

// write is the writer goroutine, the only one while writerOn is set: it
// drains the queue into the sink and exits when nothing came for
// writerLinger. Having written, it gathers for Options.Timing.WriteCoalesce before
// it looks at the queue again, so that under steady traffic the frames leave
// in fewer, fuller writes, while a frame after a quiet spell, and one
// addressed to this participant (a request, a response, a private answer),
// leave at once: only what it sees as a bystander waits.
// Once the session is killed it closes the sink, stops the pings and closes
// finished, and no writer starts again.
func (s *session) write() {
	var batch []frame
	var linger, gather *time.Timer
	defer func() {
		if linger != nil {
			linger.Stop()
		}
		if gather != nil {
			gather.Stop()
		}
	}()
	coalesce := s.sp.srv.opts.Timing.WriteCoalesce
	for {
		select {
		case <-s.done:
			s.end()
			return
		case <-s.q.wake:
		default:
			linger = restart(linger, writerLinger)
			select {
			case <-s.done:
				s.end()
				return
			case <-s.q.wake:
			case <-linger.C:
				s.writerOn.Store(false)
				// A push or kill since the last look found the writer on
				// and started none: carry on if so, unless one has started
				// since.
				if len(s.q.wake) == 0 && !s.killed() || !s.writerOn.CompareAndSwap(false, true) {
					s.q.release()
					return
				}
				continue
			}
		}
		if coalesce > 0 && s.q.onlyLazy() {
			select { // an eager frame pushed before the look is in the queue
			case <-s.q.eager:
			default:
			}
			if s.q.onlyLazy() {
				gather = restart(gather, lazyCoalesce)
				select {
				case <-s.done:
					s.end()
					return
				case <-gather.C:
				case <-s.q.eager: // company that someone waits for: go
				}
			}
		}
		select { // what is taken now needs no hurry
		case <-s.q.hurry:
		default:
		}
		var ok bool
		if batch, ok = s.drain(batch); !ok {
			s.end()
			return
		}
		if coalesce > 0 {
			gather = restart(gather, coalesce)
			select {
			case <-s.done:
				s.end()
				return
			case <-gather.C:
			case <-s.q.hurry: // an addressed frame leaves at once
			}
		}
	}
}

// restart returns t, or a new timer if it is nil, set to fire after d.
func restart(t *time.Timer, d time.Duration) *time.Timer {
	if t == nil {
		return time.NewTimer(d)
	}
	t.Reset(d)
	return t
}

// killed reports whether kill has been called.
func (s *session) killed() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// drain writes everything queued. It returns batch, emptied, for the next
// time, or false when a write failed and the session must end.
func (s *session) drain(batch []frame) ([]frame, bool) {
	batch = s.q.take(batch)
	if !s.writeFrames(batch) {
		return nil, false
	}
	clear(batch) // let the data go now that it is written
	if cap(batch) > 1024 {
		batch = nil // give a burst's buffer back
	}
	if s.dropped.Load() > 0 && !s.noticeDropped() {
		return nil, false
	}
	if s.q.empty() {
		if err := s.sink.idle(); err != nil {
			s.kill(websocket.StatusInternalError, "write failed")
		}
	}
	return batch, true
}

// end is the last writer's: it closes the sink, waits for a ping under way
// and stops the pings, and marks the session finished.
func (s *session) end() {
	s.finish()
	s.pingMu.Lock()
	s.pingStopped = true
	if s.pingTimer != nil {
		s.pingTimer.Stop()
	}
	s.pingMu.Unlock()
	s.pinging.Wait()
	s.cancel()
	close(s.finished)
}

// startPings pings the peer whenever it has been silent for PingInterval,
// from a timer; a ping that gets no pong within PongTimeout aborts the
// session.
func (s *session) startPings(ping func(context.Context) error) {
	if ping == nil {
		return
	}
	s.pingMu.Lock()
	defer s.pingMu.Unlock()
	if s.pingStopped {
		return
	}
	s.ping = ping
	s.pingTimer = time.AfterFunc(s.sp.srv.opts.Timing.PingInterval, s.pingIfSilent)
}

// pingIfSilent is the ping timer's function. It runs on a goroutine of the
// timer's, which end waits for.
func (s *session) pingIfSilent() {
	s.pingMu.Lock()
	if s.pingStopped {
		s.pingMu.Unlock()
		return
	}
	s.pinging.Add(1)
	s.pingMu.Unlock()
	defer s.pinging.Done()
	srv := s.sp.srv
	if srv.now().UnixNano()-s.lastSeen.Load() >= int64(srv.opts.Timing.PingInterval) {
		ctx, cancel := context.WithTimeout(s.ctx, srv.opts.Timing.PongTimeout)
		err := s.ping(ctx)
		cancel()
		if err != nil {
			s.abort(CloseUnresponsive, "ping timeout")
			return
		}
		s.lastSeen.Store(srv.now().UnixNano())
	}
	s.pingMu.Lock()
	if !s.pingStopped {
		s.pingTimer.Reset(srv.opts.Timing.PingInterval)
	}
	s.pingMu.Unlock()
}

// ErrorMessagesDropped tells a participant that messages were not delivered
// to it because their sender sent faster than it read (see outq).
const ErrorMessagesDropped = "messages_dropped"

// noticeDropped tells the peer, at most once a second, how many messages
// were shed for it. It reports false when the write failed.
func (s *session) noticeDropped() bool {
	now := s.sp.srv.now()
	if now.UnixNano()-s.lastDrop.Load() < int64(time.Second) {
		return true
	}
	s.lastDrop.Store(now.UnixNano())
	n := s.dropped.Swap(0)
	p := append([]byte(`{"error":"`+ErrorMessagesDropped+`","message":`), protocol.AppendString(nil,
		strconv.FormatInt(n, 10)+" messages were not delivered to you: their senders sent faster than you read")...)
	p = strconv.AppendInt(append(p, `,"count":`...), n, 10)
	env := protocol.Envelope{
		Protocol: protocol.Version, ID: protocol.NewID(), TS: protocol.FormatTime(now),
		From: protocol.GatewayID, To: []string{s.id}, Kind: protocol.KindSystemError, Payload: append(p, '}'),
	}
	return s.writeFrames([]frame{{data: env.AppendJSON(nil)}})
}

// writeFrames writes a batch of frames. Instead of a context with a deadline
// per write (which cost a third of the routing CPU), the write's start is
// recorded and the server's watchdog cancels a session whose write is stuck.
func (s *session) writeFrames(fs []frame) bool {
	s.writing.Store(nanotime())
	err := s.sink.write(s.ctx, fs)
	s.writing.Store(0)
	if err != nil {
		s.abort(websocket.StatusInternalError, "write failed")
		return false
	}
	return true
}

// finish writes what a file sink still has queued (a WebSocket peer that is
// going away does not need it) and closes the sink.
func (s *session) finish() {
	if s.transport == transportVirtual {
		if fs := s.q.take(nil); len(fs) > 0 {
			s.writeFrames(fs)
		}
		_ = s.sink.idle()
	}
	s.sink.close(s.closeCode, s.closeReason)
}

// stuck reports whether the session has been writing one frame for longer
// than limit, and if so cancels it: the peer is not reading.
func (s *session) stuck(now, limit int64) bool {
	w := s.writing.Load()
	if w == 0 || now-w < limit {
		return false
	}
	s.abort(websocket.StatusTryAgainLater, "write timeout")
	return true
}

// epoch anchors nanotime: monotonic time, cheap to read and store.
var epoch = time.Now()

func nanotime() int64 { return int64(time.Since(epoch)) }
