// Package natscluster implements the cluster interfaces on NATS: several
// gateway nodes, each with its own connection to a NATS server or cluster.
//
//   - Broker: core NATS, two subjects per space followed by one
//     subscription, mew.<cluster>.space.<space>.p (published only) and
//     .k (also stored by the history's stream: Keep, keep.go); each
//     message carries its node's id in the Mew-Node header.
//   - State: the JetStream key-value bucket mew_<cluster>_state (history 1,
//     file storage, per-key TTL with limit markers so that watches see
//     expiries), keys <space>.<segment>.<segment>…; compare-and-swap is the
//     stream's expected last sequence per subject, which is the revision.
//   - Presence: the bucket mew_<cluster>_presence, whose MaxAge is the
//     presence TTL: each node refreshes its entries every third of the TTL
//     (by compare-and-swap, never over a newer join), so the entries of a
//     node that dies expire within the TTL.
//
// Names are escaped into NATS-safe tokens (names.go), injectively and
// reversibly, so that no space id can reach another's subjects or keys.
//
// A Node owns one goroutine (the presence heartbeat) and one per watch;
// NATS owns one per subscription. Close ends them all. Err reports the
// connection's state: while it is down the gateway must not accept
// envelopes for shared spaces (its writes and publishes are refused
// meanwhile, and what the others publish meanwhile it never sees). After a reconnection every watch starts again and
// compares the new snapshot with what it handed on: keys that changed are
// handed on, keys that vanished (deleted or expired meanwhile, or lost with
// the server's storage) become OpDelete; the buckets and the log stream are
// created again if the server lost them.
//
// StartServer embeds a NATS server with JetStream, for tests and for
// single-binary development clusters; given ServerOptions.Nkeys it admits
// only clients that sign with one of those keys. Whoever can write to NATS
// writes grants that every node enforces, so a node connects with Auth
// (a creds file, an nkey seed file, a user and password file, TLS files),
// checked before it dials, and EnsureNkeyFile makes the seed file an
// embedded server and its nodes share. Embedded servers of one NATS cluster
// admit each other's routes with a shared password (ServerOptions.RouteSecret,
// kept in a 0600 file by EnsureRouteSecret).
package natscluster
