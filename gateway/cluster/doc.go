// Package cluster defines what the gateway nodes serving one space share,
// and how it is spelled, so that several nodes behind a load balancer behave
// as one gateway.
//
// Three things are shared, each behind an interface a Node hands out:
//
//   - Broker: a space's accepted envelopes, fanned out to the other nodes.
//     A node delivers to its own connections directly, as a single gateway
//     does, and publishes for the others; one publisher's envelopes arrive
//     everywhere in its order.
//   - Presence: which logical participant is connected on which node, kept
//     alive by its node and expiring after a TTL when the node dies. One
//     logical participant has one live connection in the whole cluster: a
//     join on node B replaces the entry of node A, whose watch tells it to
//     drop its connection.
//   - State: the space's mutable state as versioned keys (runtime grants and
//     their expiries, invitations, pauses, shutdowns and kicks, open streams,
//     floor claims), with compare-and-swap, per-key TTL and watches.
//     ClaimFloor arbitrates floor claims on it.
//
// Enforcement never leaves the node. A node watches the state of each space
// it serves and keeps a local copy of what it enforces (the capability
// views, the control flags, the stream writers); a capability check reads
// that copy and costs what it costs on one node. What crosses the fabric is
// the change, once, not the check. A grant made on node A is in force on
// node B as soon as B's watch delivers it (the measured bound is in
// docs/cluster.md).
//
// The encoded form of every shared record and key is defined in one place,
// records.go. Values read from the fabric come from other nodes and are
// decoded defensively: bounded in size, checked, and refused with an error
// wrapping ErrInvalid.
//
// Two implementations satisfy the interfaces and the one conformance suite
// in clustertest: memory, the single-process default (nodes created from
// one memory.Cluster share its maps), and natscluster, built on NATS core
// subjects (Broker) and JetStream key-value buckets (State, Presence).
//
// When a node loses the fabric, Node.Err says so (ErrUnavailable): the
// gateway then stops accepting envelopes for shared spaces and tells its
// participants why, rather than let its copy diverge.
package cluster
