// Package clustertest is the conformance suite of the cluster interfaces.
// Every implementation runs it from its own tests with a Factory that makes
// n connected nodes, so the memory and the NATS implementations are held
// to the same behaviour: per-sender order and fan-out of the Broker,
// watches, compare-and-swap and TTLs of the State, presence replacement
// and expiry, the floor arbitration, and Close.
package clustertest
