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
// Lock order: Server.lazyMu, then liveSpace.mu, then credentials.mu (the one
// table of tokens, console codes and sessions, which invitations, kicks,
// revocations and shutdowns change). Server.mu guards only the closed flag
// and is never held with another lock. Code holding liveSpace.mu only queues
// frames, kills sessions, settles grants and updates the credentials, none
// of which blocks.
//
// Credentials and grants have one authority each: credentials.go resolves
// every secret and ends a participant's credentials all at once;
// provenance.go decides whether a runtime grant is still alive (its chain to
// the space's configuration, its lifetime, its granter's standing and
// presence).
//
// A space changes while it runs: grants and revocations (a participant may
// delegate only what it holds), invitations, kicks, and pause and shutdown,
// which the gateway enforces rather than leaving to the paused participant.
//
// Goroutines: a WebSocket connection's HTTP handler goroutine reads and owns
// the connection's writer goroutine, and removes the session from its space
// when reading ends; an output_log participant's writer goroutine is owned by
// the Server. Server.Close stops them all and then closes the audit log.
package gateway
