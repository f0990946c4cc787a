package protocol

import "strings"

// Version is the value of the protocol member for this version of MEW.
const Version = "mew/v0.4"

// GatewayID is the from of envelopes the gateway itself originates (welcome,
// presence, errors).
const GatewayID = "system:gateway"

// LegacyGatewayID is the from of the reference gateway's own envelopes. It is
// reserved like GatewayID, so that no participant can pose as either.
const LegacyGatewayID = "gateway"

// IsReservedID reports whether id belongs to the gateway and may be no
// participant's name, alias or invitation: GatewayID, LegacyGatewayID and
// every id starting with "system:". Case and surrounding spaces are ignored,
// so that "System:Gateway " cannot pass for the gateway in a transcript.
func IsReservedID(id string) bool {
	id = strings.TrimSpace(id)
	const prefix = "system:"
	return strings.EqualFold(id, LegacyGatewayID) ||
		(len(id) >= len(prefix) && strings.EqualFold(id[:len(prefix)], prefix))
}

// Kinds of MEW Protocol v0.4 (spec §3).
const (
	KindMCPRequest  = "mcp/request"  // MCP request or notification
	KindMCPResponse = "mcp/response" // MCP response; correlates to its request
	KindMCPProposal = "mcp/proposal" // an MCP operation for someone else to fulfil
	KindMCPWithdraw = "mcp/withdraw" // the proposer withdraws its proposal
	KindMCPReject   = "mcp/reject"   // a participant declines a proposal

	KindReasoningStart      = "reasoning/start"      // opens a reasoning context
	KindReasoningThought    = "reasoning/thought"    // one step of visible thinking
	KindReasoningConclusion = "reasoning/conclusion" // closes a reasoning context
	KindReasoningCancel     = "reasoning/cancel"     // aborts a reasoning context

	KindCapabilityGrant    = "capability/grant"     // adds capabilities to a participant
	KindCapabilityRevoke   = "capability/revoke"    // removes granted capabilities
	KindCapabilityGrantAck = "capability/grant-ack" // the recipient acknowledges a grant

	KindSpaceInvite = "space/invite" // invites a new participant
	KindSpaceKick   = "space/kick"   // removes a participant

	KindParticipantPause         = "participant/pause"
	KindParticipantResume        = "participant/resume"
	KindParticipantStatus        = "participant/status"
	KindParticipantRequestStatus = "participant/request-status"
	KindParticipantForget        = "participant/forget"
	KindParticipantCompact       = "participant/compact"
	KindParticipantCompactDone   = "participant/compact-done"
	KindParticipantClear         = "participant/clear"
	KindParticipantRestart       = "participant/restart"
	KindParticipantShutdown      = "participant/shutdown"

	KindStreamRequest = "stream/request" // asks the gateway for a stream
	KindStreamOpen    = "stream/open"    // the gateway's answer, with the stream id
	KindStreamClose   = "stream/close"   // ends a stream

	KindChat            = "chat"
	KindChatAcknowledge = "chat/acknowledge"
	KindChatCancel      = "chat/cancel"

	KindSystemPresence = "system/presence" // join, leave (and, reference extension, invited)
	KindSystemWelcome  = "system/welcome"  // the gateway greets one participant
	KindSystemError    = "system/error"    // the gateway refuses something
	// KindSystemApproval (extension, docs/approvals.md) is the gateway's
	// word on a proposal an approval rule of the space governs: who must
	// approve it, how many more, and how it ended.
	KindSystemApproval = "system/approval"
	// KindApprovalApprove (extension, docs/approvals.md) is an approver's
	// approval of a proposal (correlation_id), without carrying it out.
	KindApprovalApprove = "approval/approve"
)

// Floor control kinds (spec/responding-to.md as DESIGN.md maps it onto MEW).
const (
	// KindFloorRespondingTo claims the floor for answering a message.
	KindFloorRespondingTo = "floor/responding-to"
	// KindFloorYield tells a losing claimant to stop; gateway-only.
	KindFloorYield = "floor/yield"
)

// Kinds that the reference TypeScript implementation uses beyond the spec.
// They are not part of MEW v0.4; we speak them so that its clients work.
const (
	// KindSystemHeartbeat is sent by reference clients; always allowed there.
	KindSystemHeartbeat = "system/heartbeat"
	// KindSystemJoin is the reference CLI's join request, an envelope whose
	// payload holds space, participant(Id) and token.
	KindSystemJoin = "system/join"
	// KindSpaceInviteAck answers space/invite to the inviter, with the token.
	KindSpaceInviteAck = "space/invite-ack"

	// Stream ownership requests (owner → gateway) and their acknowledgements
	// (gateway → everyone).
	KindStreamGrantWrite           = "stream/grant-write"
	KindStreamRevokeWrite          = "stream/revoke-write"
	KindStreamTransferOwnership    = "stream/transfer-ownership"
	KindStreamWriteGranted         = "stream/write-granted"
	KindStreamWriteRevoked         = "stream/write-revoked"
	KindStreamOwnershipTransferred = "stream/ownership-transferred"
)

// Kinds returns the 35 kinds of the spec: the 33 of §3 and the two floor
// control kinds. A new slice each call, so callers may keep or change it.
func Kinds() []string {
	return []string{
		KindMCPRequest, KindMCPResponse, KindMCPProposal, KindMCPWithdraw, KindMCPReject,
		KindReasoningStart, KindReasoningThought, KindReasoningConclusion, KindReasoningCancel,
		KindCapabilityGrant, KindCapabilityRevoke, KindCapabilityGrantAck,
		KindSpaceInvite, KindSpaceKick,
		KindParticipantPause, KindParticipantResume, KindParticipantStatus,
		KindParticipantRequestStatus, KindParticipantForget, KindParticipantCompact,
		KindParticipantCompactDone, KindParticipantClear, KindParticipantRestart,
		KindParticipantShutdown,
		KindStreamRequest, KindStreamOpen, KindStreamClose,
		KindChat, KindChatAcknowledge, KindChatCancel,
		KindSystemPresence, KindSystemWelcome, KindSystemError,
		KindFloorRespondingTo, KindFloorYield,
	}
}

// ExtensionKinds returns the reference implementation's kinds that are not in
// the spec (see the constants above).
func ExtensionKinds() []string {
	return []string{
		KindSystemHeartbeat, KindSystemJoin, KindSpaceInviteAck,
		KindStreamGrantWrite, KindStreamRevokeWrite, KindStreamTransferOwnership,
		KindStreamWriteGranted, KindStreamWriteRevoked, KindStreamOwnershipTransferred,
	}
}

// IsSystem reports whether kind is in the system/ namespace, which the spec
// reserves for the gateway.
func IsSystem(kind string) bool { return strings.HasPrefix(kind, "system/") }

// IsGatewayOnly reports whether only the gateway may send kind: system/* and
// floor/yield (a participant must not be able to tell another to yield).
func IsGatewayOnly(kind string) bool { return IsSystem(kind) || kind == KindFloorYield }

// IsKnownKind reports whether kind is one of the spec's kinds or of the
// reference extensions. Unknown kinds are still valid envelopes.
func IsKnownKind(kind string) bool {
	_, ok := internKind([]byte(kind))
	return ok
}

// internKind returns the constant equal to b, so decoding a known kind costs no
// allocation. The switch on string(b) compiles to comparisons without a copy.
func internKind(b []byte) (string, bool) {
	switch string(b) {
	case KindMCPRequest:
		return KindMCPRequest, true
	case KindMCPResponse:
		return KindMCPResponse, true
	case KindMCPProposal:
		return KindMCPProposal, true
	case KindMCPWithdraw:
		return KindMCPWithdraw, true
	case KindMCPReject:
		return KindMCPReject, true
	case KindReasoningStart:
		return KindReasoningStart, true
	case KindReasoningThought:
		return KindReasoningThought, true
	case KindReasoningConclusion:
		return KindReasoningConclusion, true
	case KindReasoningCancel:
		return KindReasoningCancel, true
	case KindCapabilityGrant:
		return KindCapabilityGrant, true
	case KindCapabilityRevoke:
		return KindCapabilityRevoke, true
	case KindCapabilityGrantAck:
		return KindCapabilityGrantAck, true
	case KindSpaceInvite:
		return KindSpaceInvite, true
	case KindSpaceKick:
		return KindSpaceKick, true
	case KindParticipantPause:
		return KindParticipantPause, true
	case KindParticipantResume:
		return KindParticipantResume, true
	case KindParticipantStatus:
		return KindParticipantStatus, true
	case KindParticipantRequestStatus:
		return KindParticipantRequestStatus, true
	case KindParticipantForget:
		return KindParticipantForget, true
	case KindParticipantCompact:
		return KindParticipantCompact, true
	case KindParticipantCompactDone:
		return KindParticipantCompactDone, true
	case KindParticipantClear:
		return KindParticipantClear, true
	case KindParticipantRestart:
		return KindParticipantRestart, true
	case KindParticipantShutdown:
		return KindParticipantShutdown, true
	case KindStreamRequest:
		return KindStreamRequest, true
	case KindStreamOpen:
		return KindStreamOpen, true
	case KindStreamClose:
		return KindStreamClose, true
	case KindChat:
		return KindChat, true
	case KindChatAcknowledge:
		return KindChatAcknowledge, true
	case KindChatCancel:
		return KindChatCancel, true
	case KindSystemPresence:
		return KindSystemPresence, true
	case KindSystemWelcome:
		return KindSystemWelcome, true
	case KindSystemError:
		return KindSystemError, true
	case KindSystemApproval:
		return KindSystemApproval, true
	case KindApprovalApprove:
		return KindApprovalApprove, true
	case KindFloorRespondingTo:
		return KindFloorRespondingTo, true
	case KindFloorYield:
		return KindFloorYield, true
	case KindSystemHeartbeat:
		return KindSystemHeartbeat, true
	case KindSystemJoin:
		return KindSystemJoin, true
	case KindSpaceInviteAck:
		return KindSpaceInviteAck, true
	case KindStreamGrantWrite:
		return KindStreamGrantWrite, true
	case KindStreamRevokeWrite:
		return KindStreamRevokeWrite, true
	case KindStreamTransferOwnership:
		return KindStreamTransferOwnership, true
	case KindStreamWriteGranted:
		return KindStreamWriteGranted, true
	case KindStreamWriteRevoked:
		return KindStreamWriteRevoked, true
	case KindStreamOwnershipTransferred:
		return KindStreamOwnershipTransferred, true
	}
	return "", false
}
