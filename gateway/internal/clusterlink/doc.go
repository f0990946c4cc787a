// Package clusterlink holds the mechanics by which a space's copy on one
// gateway node is kept joined to its copies on the other nodes of a cluster
// (package cluster): the ordered writer of the node's changes to State and
// Presence, which also recognises their echoes; the watches that follow
// what other nodes change, and whether the copy is current after a
// reconnection; the holding of envelopes from other nodes until the change
// they announce is in force; the confirmation of what the node published;
// the watchdog's reading of the node's connection; the table of who is
// connected elsewhere.
//
// It knows nothing of a space's members, grants or sessions: the gateway
// decides what a change means and applies it through its own core
// functions, and hands this package bytes, keys and callbacks. Each type
// documents which lock guards it; none waits on the network while its
// caller's lock is held.
package clusterlink
