// Package clusterlink joins a space's copy on one gateway node to its
// copies on the other nodes of a cluster (package cluster).
//
// A Link is one space's link. The gateway's core makes each change to the
// space once, on its own state, and hands the Link the record the cluster
// keeps of it (a grant, a control, an alias, an invitation, a presence
// entry, a stream change, a governed proposal, an accepted envelope); the
// Link shares it through the node's State, Presence, Broker, Log and
// History, and applies what the other nodes share through Core: the
// space's lock and the core's own functions, the same that made the change
// on its node. The Link decodes what arrives, checks that it fits its key,
// keeps what names something not known here yet (Orphans), recognises the
// echoes of its own writes (Writer.Own), and holds an envelope from another
// node until the change it announces is in force here (Hold) and a frame
// until its stream's record is applied (Frames).
//
// The parts are usable alone and tested alone: Writer (the ordered writes
// of the node's changes), Watches (the State and Presence watches, and
// whether the copy is current after a reconnection), Confirms (what the
// Broker confirms it has), Appender (the streams' changes into the Log,
// frames behind them), Outage (the watchdog's reading of the connection),
// Remote (who is connected elsewhere), Page in package clusterhist (a
// poll's answer).
//
// The package knows nothing of members, sessions or grants' meaning: it
// hands Core records, names and bytes. Each type documents which lock
// guards it; none waits on the network while its caller's lock is held.
package clusterlink
