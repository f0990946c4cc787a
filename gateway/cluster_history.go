package gateway

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// This file makes the polling history (GET /participants/{id}/messages) the
// cluster's on a node of a cluster: the public envelopes are read from the
// node's History log, the same on every node, and the private answers (an
// error for one participant, the invite-ack with its token) stay on the node
// that made them, in the space's own history, which holds only those then.
//
// Each public envelope is appended once, by the node that accepted it or
// made it (deliveries marked remote are another node's). The routing path
// never waits for the fabric: broadcastLocked queues the envelope on the
// node's historyWriter, one goroutine appends in queue order (so each
// sender's order holds in the history), and a full queue drops and counts
// (mew_gateway_cluster_history_dropped_total).

const (
	// historyQueueBytes bounds the node's queue of envelopes waiting to be
	// appended by size (Options.Cluster.HistoryQueue, by count).
	historyQueueBytes = 64 << 20
	historyBatch      = 256 // the most records one AppendBatch carries
	// settleWait bounds how long a poll waits for the node's own queued
	// envelopes to reach the history.
	settleWait = 2 * time.Second
	// historyStamp is the size of the time prefix of a history record: the
	// accepting node's time of the envelope, so that since= compares the
	// time the envelope's ts says, not the time the fabric stored it.
	historyStamp = 8
)

// historyWriter appends a node's envelopes to the cluster's history.
//
// Goroutine: run, owned by the writer, started by newHistoryWriter and
// ended by close (after the queue is written, or when close's ctx ends).
type historyWriter struct {
	srv   *Server
	node  cluster.Node
	log   cluster.Log
	batch cluster.BatchAppender // nil: the log appends one record at a time
	hash  string                // this node's mark in cursors (cursorHash)
	max   int                   // the queue's bound in records (Options.Cluster.HistoryQueue)

	mu       sync.Mutex
	queue    []cluster.Pending // guarded by mu
	bytes    int               // guarded by mu: the size of queue's records
	lastWarn time.Time         // guarded by mu: drops are logged at most every 10 s
	pushed   uint64            // guarded by mu: records queued since the start
	settled  uint64            // guarded by mu: records of those appended or dropped by run
	progress chan struct{}     // guarded by mu: closed and replaced when settled grows

	wake      chan struct{}
	drain     chan struct{} // closed to ask run to write the queue and return
	done      chan struct{} // closed when run has returned
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
}

func newHistoryWriter(srv *Server, node cluster.Node) *historyWriter {
	ctx, cancel := context.WithCancel(context.Background())
	hw := &historyWriter{
		srv: srv, node: node, log: node.History(), hash: cursorHash(node.ID()), max: srv.opts.Cluster.HistoryQueue,
		wake: make(chan struct{}, 1), drain: make(chan struct{}), done: make(chan struct{}),
		ctx: ctx, cancel: cancel, progress: make(chan struct{}),
	}
	hw.batch, _ = hw.log.(cluster.BatchAppender)
	go hw.run()
	return hw
}

// cursorHash marks the cursors of this node's run: a hash of its id and a
// random nonce, so that a node restarted under the same id (whose private
// sequence starts again at 0) does not honour the cursors of its past run.
func cursorHash(nodeID string) string {
	var nonce [16]byte
	_, _ = rand.Read(nonce[:]) // never fails (crypto/rand)
	h := sha256.Sum256(append([]byte(nodeID+"\x00"), nonce[:]...))
	return hex.EncodeToString(h[:4])
}

// remote marks d as another node's: it is not appended to the cluster's
// history again here.
func remote(d delivery) delivery {
	d.remote = true
	return d
}

// historyLocked queues d, a public envelope accepted or made here, for the
// cluster's history; sp.mu must be held, so that the queue's order is the
// space's delivery order. It never blocks.
func (cl *clusterSpace) historyLocked(d delivery) {
	if len(d.data) > cl.sp.srv.opts.Limits.HistoryBytes || historyStamp+len(d.data) > cluster.MaxRecordLen {
		return // not kept, as on a single node (history.add)
	}
	cl.hist.push(cl.sp.id, d.at, d.data)
}

func (hw *historyWriter) push(space string, at time.Time, data []byte) {
	rec := make([]byte, historyStamp+len(data))
	binary.BigEndian.PutUint64(rec, uint64(at.UnixNano()))
	copy(rec[historyStamp:], data)
	hw.mu.Lock()
	if len(hw.queue) >= hw.max || hw.bytes+len(rec) > historyQueueBytes {
		hw.droppedLocked(1, "the queue is full")
		hw.mu.Unlock()
		return
	}
	hw.queue = append(hw.queue, cluster.Pending{Space: space, Data: rec})
	hw.bytes += len(rec)
	hw.pushed++
	hw.mu.Unlock()
	select {
	case hw.wake <- struct{}{}:
	default:
	}
}

// droppedLocked counts n envelopes lost to the history; hw.mu must be held.
func (hw *historyWriter) droppedLocked(n int, why string) {
	hw.srv.metrics.historyDropped.Add(float64(n))
	if now := time.Now(); now.Sub(hw.lastWarn) >= 10*time.Second {
		hw.lastWarn = now
		hw.srv.opts.Logger.Warn("cluster: envelopes left out of the polling history", "count", n, "why", why)
	}
}

func (hw *historyWriter) dropped(n int, why string) {
	hw.mu.Lock()
	defer hw.mu.Unlock()
	hw.droppedLocked(n, why)
}

// run appends the queue in order, a batch at a time, until asked to drain
// and the queue is empty, or cancelled.
func (hw *historyWriter) run() {
	defer close(hw.done)
	for {
		hw.mu.Lock()
		if hw.ctx.Err() != nil {
			// Closed before the queue was written: what is left is lost.
			if len(hw.queue) > 0 {
				hw.droppedLocked(len(hw.queue), "the gateway closed")
			}
			hw.queue, hw.bytes = nil, 0
			hw.mu.Unlock()
			return
		}
		n := min(len(hw.queue), historyBatch)
		recs := hw.queue[:n:n]
		hw.queue = hw.queue[n:]
		if len(hw.queue) == 0 {
			hw.queue = nil // let the backing array go
		}
		for _, r := range recs {
			hw.bytes -= len(r.Data)
		}
		hw.mu.Unlock()
		if n > 0 {
			hw.write(recs)
			hw.mu.Lock()
			hw.settled += uint64(n)
			close(hw.progress)
			hw.progress = make(chan struct{})
			hw.mu.Unlock()
			continue
		}
		select {
		case <-hw.wake:
		case <-hw.drain:
			hw.mu.Lock()
			empty := len(hw.queue) == 0
			hw.mu.Unlock()
			if empty {
				return
			}
		case <-hw.ctx.Done():
			return
		}
	}
}

func (hw *historyWriter) write(recs []cluster.Pending) {
	if err := hw.node.Err(); err != nil {
		hw.dropped(len(recs), err.Error()) // cut off: waiting for timeouts would only delay the rest
		return
	}
	ctx, cancel := context.WithTimeout(hw.ctx, clusterOpTimeout)
	defer cancel()
	if hw.batch != nil {
		if failed, err := hw.batch.AppendBatch(ctx, recs); failed > 0 {
			hw.dropped(failed, fmt.Sprint(err))
		}
		return
	}
	for i, r := range recs {
		if _, err := hw.log.Append(ctx, r.Space, r.Data); err != nil {
			if errors.Is(err, cluster.ErrUnavailable) || errors.Is(err, cluster.ErrClosed) || ctx.Err() != nil {
				hw.dropped(len(recs)-i, err.Error())
				return
			}
			hw.dropped(1, err.Error())
		}
	}
}

// settle waits until every record queued before it was called has been
// appended (or dropped), or ctx ends: a poll then reads everything this
// node accepted before it.
func (hw *historyWriter) settle(ctx context.Context) {
	hw.mu.Lock()
	target := hw.pushed
	for hw.settled < target {
		ch := hw.progress
		hw.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-hw.done:
			return
		}
		hw.mu.Lock()
	}
	hw.mu.Unlock()
}

// close writes what is queued (until ctx ends) and stops run. It is safe
// to call more than once.
func (hw *historyWriter) close(ctx context.Context) {
	hw.closeOnce.Do(func() { close(hw.drain) })
	select {
	case <-hw.done:
	case <-ctx.Done():
		hw.cancel()
		<-hw.done
	}
	hw.cancel()
}

// --- polling ---

// maxCursorLen bounds a cursor: three numbers and a hash fit in 50 bytes.
const maxCursorLen = 64

// clusterCursor is where a poller is in the cluster's history: the last
// History seq it got (log), and, on the node whose hash it carries, the
// next private entry of that node's own history (priv).
type clusterCursor struct {
	log  uint64
	priv uint64
	hash string
}

func (c clusterCursor) String() string {
	return strconv.FormatUint(c.log, 10) + "." + strconv.FormatUint(c.priv, 10) + "." + c.hash
}

// parseClusterCursor reads "L.P.H" (as poll returns it) or a plain "L" (the
// single-node form, a History seq here, after which private answers are
// those made from now on); "" and "0" are the start of both.
func parseClusterCursor(s string) (c clusterCursor, private bool, err error) {
	if s == "" || s == "0" {
		return clusterCursor{}, true, nil
	}
	if len(s) > maxCursorLen {
		return c, false, errors.New("cursor is too long")
	}
	parts := strings.Split(s, ".")
	switch len(parts) {
	case 1:
		c.log, err = strconv.ParseUint(s, 10, 64)
		return c, false, err
	case 3:
		if c.log, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
			return c, false, err
		}
		if c.priv, err = strconv.ParseUint(parts[1], 10, 64); err != nil {
			return c, false, err
		}
		h := parts[2]
		if len(h) != 8 || strings.Trim(h, "0123456789abcdef") != "" {
			return c, false, errors.New("bad node mark")
		}
		c.hash = h
		return c, true, nil
	}
	return c, false, errors.New("not a cursor")
}

// poll answers GET /participants/{id}/messages on a node of a cluster.
// after and limit are checked already; cursor is the raw parameter.
func (cl *clusterSpace) poll(w http.ResponseWriter, r *http.Request, m *member, after time.Time, cursor string, limit int) {
	c, private, err := parseClusterCursor(cursor)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "cursor must be one a poll returned (L.P.H) or a non-negative integer")
		return
	}
	hw := cl.hist
	if err := cl.node.Err(); err != nil {
		writeError(w, http.StatusServiceUnavailable, ErrorClusterUnavailable, "this gateway node cannot reach the cluster, which keeps the history: try another node")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), clusterOpTimeout)
	defer cancel()
	// What this node accepted before the poll is in the answer: a poster
	// polling the node it posted to reads its own envelopes. (Another
	// node's reach the history a moment after they were accepted there.)
	sctx, scancel := context.WithTimeout(ctx, settleWait)
	hw.settle(sctx)
	scancel()
	pub, scanned, err := cl.readHistory(ctx, c.log, after, limit)
	if err != nil {
		cl.sp.srv.opts.Logger.Warn("cluster: reading the polling history", "space", cl.sp.id, "err", err)
		writeError(w, http.StatusServiceUnavailable, ErrorClusterUnavailable, "the cluster's history could not be read: try again")
		return
	}

	// The private answers this node made for m: from the cursor's P if it
	// is this node's, else only those made from now on (a poller that moved
	// here did not miss them here: they were made elsewhere, or before the
	// node's run its cursor knew).
	sp := cl.sp
	sp.mu.Lock()
	if !private || (c.hash != "" && c.hash != hw.hash) {
		c.priv = sp.history.next
	}
	priv := sp.history.privateSince(after, c.priv, limit, m)
	privNext := sp.history.next
	sp.mu.Unlock()

	// Merge both, by time, each in its own order, and take limit of them:
	// each cursor part moves past what was taken of its own, so that nothing
	// is returned twice or skipped, whichever node the next poll goes to.
	out := make([]json.RawMessage, 0, min(limit, len(pub)+len(priv)))
	i, j := 0, 0
	for len(out) < limit && (i < len(pub) || j < len(priv)) {
		if j == len(priv) || (i < len(pub) && !priv[j].at.Before(pub[i].at)) {
			out = append(out, pub[i].data)
			i++
		} else {
			out = append(out, priv[j].data)
			j++
		}
	}
	next := clusterCursor{log: c.log, priv: c.priv, hash: hw.hash}
	switch {
	case i == len(pub):
		next.log = scanned
	case i > 0:
		next.log = pub[i-1].seq
	}
	switch {
	case j == len(priv) && len(priv) < limit:
		next.priv = privNext // every visible one up to the end was taken (as on one node)
	case j > 0:
		next.priv = priv[j-1].seq + 1
	}
	writeJSON(w, http.StatusOK, struct {
		Messages []json.RawMessage `json:"messages"`
		Cursor   string            `json:"cursor"`
	}{out, next.String()})
}

// readHistory returns up to limit public entries of the cluster's history
// after seq from and recorded after the time after (when set), and the seq
// of the last record it looked at (from if none): past the last entry
// returned only when there are no more.
func (cl *clusterSpace) readHistory(ctx context.Context, from uint64, after time.Time, limit int) ([]entry, uint64, error) {
	var out []entry
	last := from
	// Without a time filter every record is returned: read no more than
	// the page (records may be up to 1 MiB each). With one, scan in the
	// largest batches.
	batch := limit
	if !after.IsZero() {
		batch = cluster.MaxReadLen
	}
	for len(out) < limit {
		recs, err := cl.node.History().Read(ctx, cl.sp.id, last, batch)
		if err != nil {
			return nil, 0, err
		}
		for _, rec := range recs {
			e, ok := historyEntry(rec)
			if ok && e.visible(after, nil) {
				out = append(out, e)
			}
			last = rec.Seq
			if len(out) == limit {
				return out, last, nil
			}
		}
		if len(recs) < batch {
			break
		}
	}
	return out, last, nil
}

// historyEntry decodes a record of the cluster's history: a public entry.
// A record another node wrote wrongly is left out.
func historyEntry(rec cluster.Record) (entry, bool) {
	if len(rec.Data) <= historyStamp || !json.Valid(rec.Data[historyStamp:]) {
		return entry{}, false // the answer's messages must stay JSON
	}
	at := time.Unix(0, int64(binary.BigEndian.Uint64(rec.Data)))
	return entry{seq: rec.Seq, at: at, data: rec.Data[historyStamp:]}, true
}
