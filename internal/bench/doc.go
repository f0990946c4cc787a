// Package bench measures a MEW gateway under load: how many envelopes per second it fans out to a
// space, how long a request takes to reach its responder and come back, and what an idle
// connection costs.
//
// A Target is something to measure. It starts a server for a set of participant ids and returns
// an Endpoint: the WebSocket URL clients dial and a bearer token per participant. Two targets
// live here: RelayTarget, a bare relay written with the same WebSocket library as the gateway
// that forwards every message to every connection and does nothing else, so that comparing a
// gateway with it isolates the gateway's own work (parsing, validation, enforcement, logging);
// and URLTarget, a server that is already running. The gateway's own Target lives with the
// gateway. ChildTarget runs any of them in a child process (see ServeChild), so that CPU time
// and memory are read from /proc/PID and are the server's alone.
//
// Three workloads run against a target:
//
//   - Fanout: N participants join one space, K of them send chat envelopes at a fixed total
//     rate, and every participant (the senders included, since the gateway shows every envelope
//     to everyone) records each delivery and its latency from send to receipt.
//   - RPC: P requester/responder pairs exchange mcp/request and mcp/response envelopes; the
//     requester measures the round trip.
//   - Idle: N connections join and sit still; the process's heap, stack and goroutine growth is
//     divided by N.
//
// All clients run in this process and share one monotonic clock, so a sent envelope carries its
// send time (nanoseconds since the run's start) in its id, and receivers need no extra fields:
// ids look like "b<run>-<sender>-<seq>-<ns>". Receivers see all the space's traffic (presence,
// other participants' envelopes) and skip what is not theirs with a substring test before they
// parse anything. Latencies go into a Histogram: log-linear buckets, no allocation per sample,
// mergeable across receivers.
//
// Every workload closes all its connections and stops all its goroutines before it returns,
// also when its context is cancelled or a connection fails. A connection that fails during a run
// is counted in the result's Errors rather than ending the run.
package bench
