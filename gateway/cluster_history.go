package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/mew-protocol/mew/gateway/internal/clusterhist"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
)

// This file makes the polling history (GET /participants/{id}/messages) the
// cluster's on a node of a cluster: the public envelopes are read from the
// node's History log, the same on every node (gateway/internal/clusterhist),
// and the private answers (an error for one participant, the invite-ack with
// its token) stay on the node that made them, in the space's own history,
// which holds only those then.
//
// Each public envelope is appended once, by the node that accepted it or
// made it (deliveries marked remote are another node's). The routing path
// never waits for the fabric: deliveredLocked queues the envelope on the
// node's clusterhist.Writer, which appends in queue order, and a full queue
// drops and counts (mew_gateway_cluster_history_dropped_total).

// settleWait bounds how long a poll waits for the node's own queued
// envelopes to reach the history.
const settleWait = 2 * time.Second

// historyLocked queues d, a public envelope accepted or made here, for the
// cluster's history; sp.mu must be held, so that the queue's order is the
// space's delivery order. It never blocks.
func (cl *clusterSpace) historyLocked(d delivery) {
	if len(d.data) > cl.sp.srv.opts.Limits.HistoryBytes || !clusterhist.Fits(len(d.data)) {
		return // not kept, as on a single node (history.add)
	}
	cl.hist.Push(cl.sp.id, d.at, d.data)
}

// poll answers GET /participants/{id}/messages on a node of a cluster.
// after and limit are checked already; cursor is the raw parameter.
func (cl *clusterSpace) poll(w http.ResponseWriter, r *http.Request, m *member, after time.Time, cursor string, limit int) {
	c, private, err := clusterhist.ParseCursor(cursor)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "cursor must be one a poll returned (L.P.H) or a non-negative integer")
		return
	}
	hw := cl.hist
	if err := cl.node.Err(); err != nil {
		writeError(w, http.StatusServiceUnavailable, ErrorClusterUnavailable, "this gateway node cannot reach the cluster, which keeps the history: try another node")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), clusterlink.OpTimeout)
	defer cancel()
	// What this node accepted before the poll is in the answer: a poster
	// polling the node it posted to reads its own envelopes. (Another
	// node's reach the history a moment after they were accepted there.)
	sctx, scancel := context.WithTimeout(ctx, settleWait)
	hw.Settle(sctx)
	scancel()
	pub, scanned, err := clusterhist.Read(ctx, cl.node.History(), cl.sp.id, c.Log, after, limit)
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
	if !private || (c.Hash != "" && c.Hash != hw.Hash()) {
		c.Priv = sp.history.next
	}
	priv := sp.history.privateSince(after, c.Priv, limit, m)
	privNext := sp.history.next
	sp.mu.Unlock()

	privEntries := make([]clusterhist.Entry, len(priv))
	for k, e := range priv {
		privEntries[k] = clusterhist.Entry{Seq: e.seq, At: e.at, Data: e.data}
	}
	out, next := clusterhist.Page(c, hw.Hash(), pub, scanned, privEntries, privNext, limit)
	writeJSON(w, http.StatusOK, struct {
		Messages []json.RawMessage `json:"messages"`
		Cursor   string            `json:"cursor"`
	}{out, next.String()})
}
