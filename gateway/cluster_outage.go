package gateway

import (
	"errors"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
)

// A node cut off from its cluster refuses what its participants send
// (clusterSpace.refusal), but a participant that only listens would not
// learn that envelopes from the other nodes no longer reach it. So the
// watchdog tells them when the connection goes, and sends a fresh welcome
// when it is back (the roster may have changed meanwhile). An outage
// shorter than the watchdog's period is seen through the node's reconnect
// counter (cluster.StatsReporter) and announced afterwards.

// Messages of the notices, sent as system/error cluster_unavailable.
const (
	outageNotice = "this gateway node lost its connection to the cluster: envelopes sent on other nodes do not reach you, " +
		"and this node accepts nothing for the space until the connection is back (a new system/welcome will say so); " +
		"reconnecting to another node ends the wait: "
	blipNotice = "this gateway node was cut off from the cluster for a moment and is back: " +
		"envelopes sent on other nodes meanwhile did not reach you (GET /participants/{id}/messages has them)"
)

// clusterOutage compares the node's connection with the last look and tells
// the participants of every space what changed.
func (srv *Server) clusterOutage() {
	node := srv.opts.Cluster.Node
	if node == nil {
		return
	}
	err := node.Err()
	if errors.Is(err, cluster.ErrClosed) {
		return // the server is closing: its connections end anyway
	}
	if err == nil && !srv.clusterCurrent() {
		// Back, but a space has not re-read the state yet: the welcome
		// of the return waits (the spaces refuse meanwhile), and so does
		// this look, which comes again within a second.
		return
	}
	switch srv.outage.Look(err, clusterlink.Reconnects(node)) {
	case clusterlink.Lost:
		srv.opts.Logger.Warn("cluster: connection lost; refusing envelopes of the shared spaces until it is back", "err", err)
		srv.tellLocal(refuse(ErrorClusterUnavailable, outageNotice+err.Error()), false)
	case clusterlink.Back:
		srv.opts.Logger.Info("cluster: connection back")
		srv.tellLocal(nil, true)
	case clusterlink.Blip:
		srv.opts.Logger.Info("cluster: reconnected after a short outage")
		srv.tellLocal(refuse(ErrorClusterUnavailable, blipNotice), true)
	}
}

// tellLocal sends every participant connected to this node, in every
// space, the notice (if any) and then, with welcome, a fresh system/welcome.
func (srv *Server) tellLocal(notice *refusal, welcome bool) {
	for _, sp := range srv.order {
		sp.mu.Lock()
		for _, s := range sp.roster {
			if notice != nil {
				sp.unicastLocked(s, sp.errorEnvelope(s.id, notice))
			}
			if welcome {
				sp.unicastLocked(s, sp.welcomeLocked(s))
			}
		}
		sp.mu.Unlock()
	}
}

// clusterCurrent reports whether every space's copy of the cluster's state
// is current (clusterSpace.current).
func (srv *Server) clusterCurrent() bool {
	for _, sp := range srv.order {
		if !sp.link.current() {
			return false
		}
	}
	return true
}
