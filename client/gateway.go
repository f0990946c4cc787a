package client

import "github.com/mew-protocol/mew/protocol"

// FromGateway reports whether env was originated by the gateway rather than
// relayed from a participant: its from is protocol.GatewayID or, for the
// kinds the reference gateway sends under it (its stream answers and its
// unauthorized_stream_write error), protocol.LegacyGatewayID. The gateway
// fills in and checks every participant's from and reserves both ids, so
// from is the only mark of origin there is; every check of "did the
// gateway say this" in the SDK goes through here.
func FromGateway(env *protocol.Envelope) bool {
	if env == nil {
		return false
	}
	switch env.From {
	case protocol.GatewayID:
		return true
	case protocol.LegacyGatewayID:
		switch env.Kind {
		case protocol.KindStreamOpen, protocol.KindStreamWriteGranted, protocol.KindStreamWriteRevoked,
			protocol.KindStreamOwnershipTransferred, protocol.KindSystemError:
			return true
		}
	}
	return false
}
