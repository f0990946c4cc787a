package gateway

import (
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// outcome is what a kind's handler decided about an accepted envelope.
type outcome struct {
	relay bool // deliver the envelope to the space as usual
	// then, when set, runs after the relay, without the space's lock: a
	// floor claim in a cluster is arbitrated after its relay, so that the
	// agents on other nodes see it at once (floor.go: clusterSpace.floorClaim).
	then func()
	// status and body, when set, replace the HTTP API's usual
	// {"id","status":"accepted","timestamp"} answer.
	status int
	body   any
}

var relayed = outcome{relay: true}

// special runs the handler of the kinds the gateway acts on, after the
// envelope passed every check and before it is delivered. Most kinds have
// none and are simply relayed.
func (sp *liveSpace) special(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	switch env.Kind {
	case protocol.KindChat:
		sp.floorNote(o, env)
	case protocol.KindFloorRespondingTo:
		return sp.floorClaim(o, env, now)
	case protocol.KindCapabilityGrant:
		return sp.grant(o, env, now)
	case protocol.KindCapabilityRevoke:
		return sp.revoke(o, env, now)
	case protocol.KindSpaceInvite:
		return sp.invite(o, env, now)
	case protocol.KindSpaceKick:
		return sp.kick(o, env, now)
	case protocol.KindParticipantPause, protocol.KindParticipantResume, protocol.KindParticipantShutdown:
		return sp.control(o, env, now)
	case protocol.KindStreamRequest:
		return sp.streamRequest(o, env, now)
	case protocol.KindStreamClose:
		return sp.streamClose(o, env, now)
	case protocol.KindStreamGrantWrite, protocol.KindStreamRevokeWrite, protocol.KindStreamTransferOwnership:
		return sp.streamOwnership(o, env, now)
	case protocol.KindMCPRequest:
		return sp.fulfilment(o, env, now)
	case protocol.KindMCPProposal:
		return sp.proposed(o, env, now)
	case protocol.KindApprovalApprove:
		return sp.approve(o, env, now)
	case protocol.KindMCPReject, protocol.KindMCPWithdraw:
		return sp.settle(o, env, now)
	}
	return relayed, nil
}
