package client

import "strconv"

// State is where a Client's connection stands.
type State int

// States of a connection, in the order a connection goes through them.
const (
	// Disconnected: no connection; also between reconnect attempts.
	Disconnected State = iota
	// Connecting: dialling the gateway.
	Connecting
	// Connected: the WebSocket is open; the client is authenticating.
	Connected
	// Joined: the gateway's welcome arrived; Send works from here on.
	Joined
	// Ready: the handlers have run for the welcome.
	Ready
)

// String returns the state's name in lower case, as the SDK spec names it.
func (s State) String() string {
	switch s {
	case Disconnected:
		return "disconnected"
	case Connecting:
		return "connecting"
	case Connected:
		return "connected"
	case Joined:
		return "joined"
	case Ready:
		return "ready"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}
