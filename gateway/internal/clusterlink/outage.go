package clusterlink

import "github.com/mew-protocol/mew/gateway/cluster"

// Outage is a node's connection to its cluster as the gateway's watchdog
// last saw it. A node cut off refuses what its participants send, but a
// participant that only listens would not learn that envelopes from other
// nodes no longer reach it: the watchdog tells it when the connection goes
// (Lost), sends a fresh welcome when it is back (Back), and announces an
// outage shorter than its period, seen through the node's reconnect
// counter, afterwards (Blip). Only the watchdog's goroutine uses it.
type Outage struct {
	down       bool   // the node's Err was set at the last look, and announced
	reconnects uint64 // the node's reconnect counter at the last look
	// settling is set at the look that saw the connection back: the
	// counter may move just after the status does (the node counts in its
	// reconnect callback), which is the same outage, not a new one.
	settling bool
}

// Change is what a look at the connection found.
type Change int

// What a look found.
const (
	Unchanged Change = iota
	Lost             // the connection went
	Back             // it came back after a Lost
	Blip             // it went and came back between two looks
)

// NewOutage starts from the node's current reconnect counter.
func NewOutage(node cluster.Node) Outage {
	return Outage{reconnects: Reconnects(node)}
}

// Look compares the node's Err and reconnect counter with the last look.
func (o *Outage) Look(err error, reconnects uint64) Change {
	blip := err == nil && !o.down && !o.settling && reconnects != o.reconnects
	o.reconnects, o.settling = reconnects, false
	switch {
	case err != nil && !o.down:
		o.down = true
		return Lost
	case err == nil && o.down:
		o.down, o.settling = false, true
		return Back
	case blip:
		return Blip
	}
	return Unchanged
}

// Reconnects reads the node's reconnect counter, 0 when it keeps none.
func Reconnects(node cluster.Node) uint64 {
	if sr, ok := node.(cluster.StatsReporter); ok {
		return sr.Stats().Reconnects
	}
	return 0
}
