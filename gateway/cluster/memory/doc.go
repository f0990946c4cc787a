// Package memory is the in-process implementation of the cluster
// interfaces: one gateway node, or several nodes in one process sharing a
// Cluster (tests, and `mew space up --nodes` without NATS).
//
// It costs nothing where nothing is shared: publishing to a space no other
// node subscribed to does no work, and a State read is a map lookup under a
// lock. The only goroutines are one per watch and one per Broker
// subscription, each draining an unbounded queue so that a writer never
// waits for a reader (and never takes a reader's locks: a subscriber's
// handler runs on its own goroutine, so nodes in one process cannot deadlock
// on each other's space locks). Per-key TTLs are timers.
package memory
