package clusterlink

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mew-protocol/mew/gateway/internal/clusterhist"
)

// The polling history (GET /participants/{id}/messages) on a node of a
// cluster: the public envelopes are read from the node's History log, the
// same on every node (clusterhist), and the private answers (an error for
// one participant, the invite-ack with its token) stay on the node that
// made them, in the space's own history (Core.PrivateLocked).

// settleWait bounds how long a poll waits for the node's own queued
// envelopes to reach the history.
const settleWait = 2 * time.Second

// FromNext asks Core.PrivateLocked for the private answers made from now
// on: none yet, and the sequence number of the next.
const FromNext = ^uint64(0)

// Errors of Poll.
var (
	// ErrBadCursor: the cursor is not one a poll returned.
	ErrBadCursor = errors.New("cursor must be one a poll returned (L.P.H) or a non-negative integer")
	// ErrUnreachable: the node cannot reach the cluster, which keeps the
	// history.
	ErrUnreachable = errors.New("this gateway node cannot reach the cluster, which keeps the history: try another node")
	// ErrHistoryUnavailable: reading the cluster's history failed.
	ErrHistoryUnavailable = errors.New("the cluster's history could not be read: try again")
)

// Poll returns participant's page of the space's history after cursor
// (the raw parameter) and since after, at most limit messages, and the
// cursor of the next page. after and limit are checked already.
func (l *Link) Poll(ctx context.Context, participant, cursor string, after time.Time, limit int) ([]json.RawMessage, string, error) {
	c, private, err := clusterhist.ParseCursor(cursor)
	if err != nil {
		return nil, "", ErrBadCursor
	}
	hw := l.opts.Hist
	if l.node.Err() != nil {
		return nil, "", ErrUnreachable
	}
	ctx, cancel := context.WithTimeout(ctx, OpTimeout)
	defer cancel()
	// What this node accepted before the poll is in the answer: a poster
	// polling the node it posted to reads its own envelopes. (Another
	// node's reach the history a moment after they were accepted there.)
	sctx, scancel := context.WithTimeout(ctx, settleWait)
	hw.Settle(sctx)
	scancel()
	pub, scanned, err := clusterhist.Read(ctx, l.node.History(), l.space, c.Log, after, limit)
	if err != nil {
		l.log.Warn("cluster: reading the polling history", "space", l.space, "err", err)
		return nil, "", ErrHistoryUnavailable
	}
	// The private answers this node made for the poller: from the cursor's
	// P if it is this node's, else only those made from now on (a poller
	// that moved here did not miss them here: they were made elsewhere, or
	// before the node's run its cursor knew).
	l.core.Lock()
	from := c.Priv
	if !private || (c.Hash != "" && c.Hash != hw.Hash()) {
		from = FromNext
	}
	priv, privNext := l.core.PrivateLocked(participant, after, from, limit)
	l.core.Unlock()
	if from == FromNext {
		c.Priv = privNext
	}
	out, next := clusterhist.Page(c, hw.Hash(), pub, scanned, priv, privNext, limit)
	return out, next.String(), nil
}
