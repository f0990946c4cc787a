// Package gateway is the MEW Protocol v0.4 gateway: the trust boundary every
// envelope of a space passes through.
//
// A Server is an http.Handler. It accepts WebSocket connections at / and /ws
// and serves the HTTP API (/health, /participants, /participants/{id}/messages
// for injection and polling, /metrics). It answers only requests whose Host
// header names a host it serves (Options.AllowedHosts; 421 otherwise), which
// keeps pages of other sites out by DNS rebinding. The token a client
// presents, in an Authorization: Bearer header or in the join message
// reference clients send first, decides which participant of which space it
// is; a different id it asks for becomes a runtime alias of that participant
// (spec 3.6.4), never a way to become someone else.
//
// Every inbound envelope goes through the same steps on both transports: rate
// limit, size limit, strict decoding, from filled or checked, id and ts
// filled, validation, gateway-only kinds refused, capability match. An
// accepted envelope is delivered to every participant of the space, the
// sender included; a refused one is answered with a system/error to the
// sender alone, whose connection stays open. docs/gateway.md lists the error
// codes, limits, HTTP answers and log formats.
//
// # Concurrency
//
// Each connection has a bounded outbound queue drained by its own writer
// goroutine. Delivery never waits for a recipient: a full queue disconnects
// that recipient as a slow consumer (close 1013). A space's lock is held while
// an envelope is queued for all its recipients, so every participant sees the
// space's envelopes in the same order.
//
// Nothing waits on a disk, the network or a full queue while a space's lock
// is held. The audit log's queue takes every record at once (ordering kept:
// records are appended under the space's lock); when it has grown past
// Options.Audit.QueueSize (a disk slower than the traffic) the gateway stops
// taking in participants' envelopes and joins, each waiting before it takes
// any lock (audit.Log.WaitRoom), until the writer catches up. Stream frames,
// which it does not record, flow on (TestStalledAuditDisk).
//
// # Locks
//
// Every mutex of the package, what it guards, and the order they nest in (a
// lock may be taken while holding only those listed above it on its line
// of descent; TestLockDoc keeps this list complete):
//
//	Server.lazyMu        lazy connects of output_log participants; then liveSpace.mu
//	liveSpace.mu         a space's members, sessions, roster, streams, floor, grants;
//	                     held to queue frames, never to wait; then any of:
//	  credentials.mu     the one table of tokens, console codes and sessions (leaf)
//	  clusterlink.Writer.mu, clusterlink.Confirms.mu the space's queue of writes to the
//	                     cluster and of publishes to confirm (leaves, in
//	                     gateway/internal/clusterlink)
//	  clusterhist.Writer.mu the cluster history's queue (leaf, in gateway/internal/clusterhist)
//	  outq.mu            one connection's outbound queue (leaf)
//	  audit.Log.mu       the audit log's queue (leaf, in gateway/internal/audit)
//	  notify.Notifier.mu a space's webhook notifications on their way to its notifier's
//	                     loop (leaf, in gateway/internal/notify)
//	Server.mu            the closed flag and the poller of parked connections
//	                     (park.go); never held with another lock
//	poller.mu            parked connections' table and epoll set (leaf)
//	session.pingMu       a connection's ping timer (leaf)
//	corkConn.mu          a WebSocket's write buffer, taken by its writer goroutine (leaf)
//	connTable.mu         the listener's open connections (leaf)
//	pendingTable.mu      connections waiting for their join message (leaf)
//	lineageGate.mu       lineage requests' rate limits and indexes (leaf)
//	lineageIndex.mu      one space's index of the audit log, held while it reads the
//	                     files: never with a space's lock
//
// Credentials and grants have one authority each: credentials.go resolves
// every secret and ends a participant's credentials all at once;
// provenance.go decides whether a runtime grant is still alive (its chain to
// the space's configuration, its lifetime, its granter's standing and
// presence).
//
// A space's state has one authority too: the core changes it, once, and
// tells the space's link (link.go), which on one node is solo (nothing to
// share) and in a cluster is clusterSpace (shared.go): it turns the change
// into the record the cluster keeps and hands it to the space's
// clusterlink.Link (gateway/internal/clusterlink), which shares it through
// Options.Cluster.Node and applies the other nodes' changes through the
// core's remote…Locked functions, the Link's Core (spaceCore).

// A space changes while it runs: grants and revocations (a participant may
// delegate only what it holds), invitations, kicks, and pause and shutdown,
// which the gateway enforces rather than leaving to the paused participant.
//
// Goroutines: a WebSocket connection's HTTP handler goroutine reads and owns
// the connection's writer goroutine, and removes the session from its space
// when reading ends; an output_log participant's writer goroutine is owned by
// the Server, and so are the loop and workers of each space's webhook notifier
// (notify.go, gateway/internal/notify). Server.Close stops them all (the
// notifiers after the watchdog, which escalates proposals) and then closes the
// audit log.
package gateway
