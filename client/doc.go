// Package client is layer 1 of the MEW Protocol SDK: a participant's
// WebSocket connection to a gateway, with authentication, reconnection,
// heartbeats, events and stream data frames. The participant and agent
// layers are built on a *Client; a program may also use one directly.
//
// # Connecting
//
// New checks the Options; Connect dials the gateway, authenticates (with an
// Authorization: Bearer header, or with the join message reference clients
// send first) and returns once the gateway's system/welcome has arrived. The
// token decides which participant the client is; ID and Welcome report what
// the gateway said. A join the gateway refuses (an unknown token, an id that
// is taken) returns a *RefusedError, which wraps ErrRefused and carries the
// gateway's error code.
//
//	c, err := client.New(client.Options{
//		Gateway:   "ws://127.0.0.1:8080",
//		Space:     "demo",
//		Token:     token,
//		Reconnect: true,
//	})
//	if err != nil { ... }
//	c.OnKind(protocol.KindChat, func(env *protocol.Envelope) { ... })
//	if err := c.Connect(ctx); err != nil { ... }
//	defer c.Close()
//
// # Sending
//
// Send fills in protocol, id, ts and from when they are empty, checks the
// envelope with protocol.Envelope.Validate, encodes it and queues it for the
// connection's writer goroutine; it is safe to call from many goroutines.
// A nil error means the envelope was queued on the current connection, not
// that the gateway accepted it: the gateway answers a refusal with a
// system/error correlated to the envelope's id, and relays what it accepts
// to everyone, the sender included. Nothing is buffered across connections:
// between a lost connection and the next welcome Send returns
// ErrNotConnected, and envelopes still queued when a connection drops are
// lost. SendStreamData writes a stream data frame "#<stream_id>#<data>".
//
// # Events
//
// Handlers are registered with the On methods, each of which returns a
// function that removes the handler. Every handler of a Client runs on one
// dispatch goroutine, in the order the events happened: a participant sees
// the space's envelopes, stream frames and its own connection's state
// changes in one sequence. A handler that blocks delays every event after
// it, so long work belongs in a goroutine of its own. A handler that panics
// is recovered; the panic is logged and reported to the OnError handlers as
// an error wrapping ErrHandlerPanic, and the client carries on.
//
// Between the reader goroutine and the dispatch goroutine is a bounded
// queue (Options.InboundQueue, 4096 messages by default). If the handlers
// fall that far behind the gateway, the client does not grow the queue
// without bound: it closes the connection with an error wrapping
// ErrSlowConsumer (and reconnects when Options.Reconnect is set), as the
// gateway itself does with recipients that do not keep up.
//
// Handlers must not call Close, which waits for the dispatch goroutine; call
// it from another goroutine (go c.Close()) instead.
//
// # The gateway's word
//
// Only the gateway may send system/* and floor/yield (protocol.IsGatewayOnly).
// An envelope of such a kind whose from is not the gateway's
// (protocol.GatewayID; see FromGateway) is never dispatched: it is dropped
// and reported to the OnError handlers as ErrNotFromGateway, so that a
// participant's envelope relayed by a careless gateway cannot pass for a
// welcome, a refusal or a presence. Code that must know whether the
// gateway said something it also lets participants say (stream/open, for
// one) asks FromGateway.
//
// # States
//
// A connection goes through Connecting (dialling), Connected (the WebSocket
// is open), Joined (the welcome arrived; Send works from here) and Ready (the
// handlers have run for the welcome), and ends in Disconnected. OnStateChange
// handlers see every transition in order.
//
// # Reconnecting
//
// With Options.Reconnect, a connection that drops after Connect succeeded is
// dialled again after a backoff (Options.ReconnectDelay doubled at each
// attempt, with ±20% jitter, up to Options.MaxReconnectDelay), for at most
// Options.MaxReconnectAttempts attempts. The client authenticates again and
// the OnWelcome handlers run for the new welcome. It never reconnects after
// Close, nor when the gateway says that trying again is pointless: close
// 4000 (another connection of the same participant replaced this one;
// ErrReplaced), 4001 (kicked; ErrKicked), or a refused join (ErrRefused,
// which covers a close 1008 before the welcome). A gateway that goes away
// (1001), drops a slow consumer (1013) or simply vanishes is dialled again,
// and so is a close 1008 after the welcome (the MEW gateway sends it when
// its ping goes unanswered): if the gateway no longer accepts the token,
// the new join is refused and the client stops there.
//
// # Several gateways
//
// The nodes of a gateway cluster serve one space together (docs/cluster.md).
// Options.Gateways lists their URLs (Options.Gateway, when set, comes
// first); SplitGateways reads a comma-separated list, as the mew CLI's
// -g/--gateway flags and MEW_GATEWAY take it. Connect tries the URLs in
// order until one joins: a node that cannot be dialled or does not welcome
// in time is passed over, but a refusal ends Connect, since every node of
// the space would refuse the same token. Once connected, a dropped
// connection moves to the next URL, and so does each failed reconnect
// attempt, round robin, with the backoff above: the node that dropped the
// connection is tried again last. URL reports the node of the current
// connection. A participant that moves joins the new node, whose welcome
// lists everyone in the cluster; its grants are the cluster's, not the
// node's.
//
//	c, err := client.New(client.Options{
//		Gateways:  client.SplitGateways("ws://n1:8080,ws://n2:8080,ws://n3:8080"),
//		Space:     "demo",
//		Token:     token,
//		Reconnect: true,
//	})
//
// # Heartbeat
//
// Every Options.HeartbeatInterval the client pings the gateway; a ping not
// answered within the interval drops the connection, and the reconnect rules
// apply. The client also answers the gateway's own pings as long as it is
// connected, heartbeat or not.
//
// # Goroutines
//
// A connected Client runs a reader, a writer and (unless disabled) a
// heartbeat goroutine per connection, a supervisor goroutine that reconnects,
// and the dispatch goroutine. Close stops all of them and waits until they
// have returned. After a connection ends for good (a refusal, a replacement,
// no reconnect) they stop by themselves once the last events have been
// handled, but a Client should still be closed.
package client
