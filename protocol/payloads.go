package protocol

import (
	"encoding/json"
	"slices"
)

// Typed payloads, one per kind that has a defined body. JSON names are the
// spec's (snake_case) or, for reference extensions, the reference's; optional
// members are omitted when empty. Capabilities stay raw JSON: their meaning is
// the capability package's. Slices whose emptiness the reference shows on the
// wire ("capabilities":[], "active_streams":[]) use omitzero, so nil omits the
// member and an empty slice writes [].

// Reason codes suggested by spec §3.3.3 for mcp/withdraw and mcp/reject.
// Participants may send others and must accept unknown ones.
const (
	ReasonDisagree       = "disagree"
	ReasonInappropriate  = "inappropriate"
	ReasonUnsafe         = "unsafe"
	ReasonBusy           = "busy"
	ReasonIncapable      = "incapable"
	ReasonPolicy         = "policy"
	ReasonDuplicate      = "duplicate"
	ReasonInvalid        = "invalid"
	ReasonTimeout        = "timeout"
	ReasonResourceLimit  = "resource_limit"
	ReasonNoLongerNeeded = "no_longer_needed"
	ReasonOther          = "other"
)

// Values of system/error's error member, as the reference gateway sends them.
const (
	ErrorCapabilityViolation = "capability_violation"
	ErrorInvalidRequest      = "invalid_request"
	ErrorTargetNotFound      = "target_not_found"
	ErrorUnauthorizedStream  = "unauthorized_stream_write"
	ErrorStreamNotFound      = "stream_not_found"
	ErrorUnauthorized        = "unauthorized"
	ErrorParticipantNotFound = "participant_not_found"
	ErrorInvalidOperation    = "invalid_operation"
)

// Values of system/error's code member in the reference gateway's bare errors.
const (
	CodeValidationError = "VALIDATION_ERROR" // the envelope broke a rule
	CodeProcessingError = "PROCESSING_ERROR" // the message could not be parsed or handled
)

// Values of system/presence's event member.
const (
	PresenceJoin    = "join"
	PresenceLeave   = "leave"
	PresenceInvited = "invited" // reference extension, announced on space/invite
)

// Values of status members used by the spec and the reference.
const (
	InviteCreated       = "created"        // space/invite-ack
	InviteAlreadyExists = "already_exists" // space/invite-ack
	GrantAccepted       = "accepted"       // capability/grant-ack
	ChatAckReceived     = "received"       // chat/acknowledge

	ParticipantStatusActive    = "active" // participant/status
	ParticipantStatusPaused    = "paused"
	ParticipantStatusNearLimit = "near_limit"

	CompactStatusCompacted = "compacted" // participant/compact-done
	CompactStatusSkipped   = "skipped"
)

// Enumerated payload values.
const (
	FormatPlain    = "plain"    // chat format, the default
	FormatMarkdown = "markdown" // chat format

	ForgetOldest = "oldest" // participant/forget direction
	ForgetNewest = "newest"

	DirectionUpload   = "upload" // stream/request direction
	DirectionDownload = "download"

	StreamEncodingText   = "text" // stream/open encoding
	StreamEncodingBinary = "binary"

	StreamCloseComplete  = "complete" // stream/close reason
	StreamCloseCancelled = "cancelled"
)

// ParticipantInfo is one participant of a welcome or presence payload.
type ParticipantInfo struct {
	ID           string            `json:"id"`
	Capabilities []json.RawMessage `json:"capabilities,omitzero"` // absent in presence leave
}

// Welcome is the payload of system/welcome.
type Welcome struct {
	You          ParticipantInfo   `json:"you"`
	Participants []ParticipantInfo `json:"participants"`
	// ActiveStreams is nil in the reference's post-grant welcome updates,
	// empty in first welcomes without streams.
	ActiveStreams []StreamInfo `json:"active_streams,omitzero"`
}

// MarshalJSON writes a nil Participants as [] (the member is required).
func (w Welcome) MarshalJSON() ([]byte, error) {
	type plain Welcome
	if w.Participants == nil {
		w.Participants = []ParticipantInfo{}
	}
	return Marshal(plain(w))
}

// Presence is the payload of system/presence.
type Presence struct {
	Event       string          `json:"event"` // PresenceJoin, PresenceLeave, PresenceInvited
	Participant ParticipantInfo `json:"participant"`
	InvitedBy   string          `json:"invited_by,omitempty"` // invited only
	Reason      string          `json:"reason,omitempty"`     // invited only
}

// SystemError is the payload of system/error.
type SystemError struct {
	Error            string            `json:"error"` // ErrorCapabilityViolation, ... or a message
	Message          string            `json:"message,omitempty"`
	Code             string            `json:"code,omitempty"` // CodeValidationError, CodeProcessingError
	AttemptedKind    string            `json:"attempted_kind,omitempty"`
	YourCapabilities []json.RawMessage `json:"your_capabilities,omitzero"`
	Targets          []string          `json:"targets,omitempty"`   // target_not_found
	StreamID         string            `json:"stream_id,omitempty"` // stream errors
}

// Grant is the payload of capability/grant; the envelope id is the grant id.
type Grant struct {
	Recipient    string            `json:"recipient"`
	Capabilities []json.RawMessage `json:"capabilities"`
	Reason       string            `json:"reason,omitempty"`
	// ExpiresAt (RFC 3339) or TTLSeconds make the grant end by itself: the
	// gateway removes it then. Neither: it lasts until revoked or the end
	// of the gateway's run. A mew extension; the reference has neither.
	ExpiresAt  string `json:"expires_at,omitempty"`
	TTLSeconds int64  `json:"ttl_seconds,omitempty"`
	// Session binds the grant to its granter's presence: it ends when the
	// granter's last connection has been gone for the gateway's grace
	// period (a mew extension; a grant "for this session").
	Session bool `json:"session,omitempty"`
}

// Revoke is the payload of capability/revoke: by grant id or by pattern.
type Revoke struct {
	Recipient    string            `json:"recipient"`
	GrantID      string            `json:"grant_id,omitempty"`
	Capabilities []json.RawMessage `json:"capabilities,omitempty"`
	Reason       string            `json:"reason,omitempty"`
}

// GrantAck is the payload of capability/grant-ack.
type GrantAck struct {
	Status string `json:"status,omitempty"` // GrantAccepted
}

// Invite is the payload of space/invite.
type Invite struct {
	ParticipantID       string            `json:"participant_id"`
	Email               string            `json:"email,omitempty"`
	InitialCapabilities []json.RawMessage `json:"initial_capabilities,omitempty"`
	Reason              string            `json:"reason,omitempty"`
}

// InviteAck is the payload of space/invite-ack (reference extension), sent to
// the inviter only since it carries the new participant's token.
type InviteAck struct {
	Status        string `json:"status"` // InviteCreated, InviteAlreadyExists
	ParticipantID string `json:"participant_id"`
	Token         string `json:"token,omitempty"`
	ConnectionURL string `json:"connection_url,omitempty"`
	Error         string `json:"error,omitempty"`
}

// Kick is the payload of space/kick.
type Kick struct {
	ParticipantID string `json:"participant_id"`
	Reason        string `json:"reason,omitempty"`
}

// Pause is the payload of participant/pause.
type Pause struct {
	Reason         string `json:"reason,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
}

// Resume is the payload of participant/resume.
type Resume struct {
	Reason string `json:"reason,omitempty"`
}

// RequestStatus is the payload of participant/request-status.
type RequestStatus struct {
	Fields []string `json:"fields,omitempty"` // metrics wanted; empty = all
}

// Status is the payload of participant/status. The spec allows any further
// snake_case metric; those are kept in Extra and written after the known ones
// in key order.
type Status struct {
	Tokens            int     `json:"tokens,omitempty"`
	MaxTokens         int     `json:"max_tokens,omitempty"`
	MessagesInContext int     `json:"messages_in_context"` // the spec's one required member
	LatencyMS         float64 `json:"latency_ms,omitempty"`
	Status            string  `json:"status,omitempty"` // active, paused, compacting, ...

	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the known members, then Extra.
func (s Status) MarshalJSON() ([]byte, error) {
	type plain Status
	return marshalWithExtra(plain(s), s.Extra)
}

// UnmarshalJSON reads the known members and keeps the others in Extra.
func (s *Status) UnmarshalJSON(data []byte) error {
	type plain Status
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	if err != nil {
		return err
	}
	*s = Status(p)
	s.Extra = extra
	return nil
}

// Forget is the payload of participant/forget.
type Forget struct {
	Direction string `json:"direction"` // ForgetOldest or ForgetNewest
	Entries   int    `json:"entries,omitempty"`
}

// Compact is the payload of participant/compact.
type Compact struct {
	Reason       string `json:"reason,omitempty"`
	TargetTokens int    `json:"target_tokens,omitempty"`
}

// CompactDone is the payload of participant/compact-done.
type CompactDone struct {
	FreedTokens   int    `json:"freed_tokens,omitempty"`
	FreedMessages int    `json:"freed_messages,omitempty"`
	Status        string `json:"status,omitempty"` // CompactStatusCompacted, CompactStatusSkipped
	Skipped       bool   `json:"skipped,omitempty"`
	Reason        string `json:"reason,omitempty"`
}

// Clear is the payload of participant/clear; the payload itself is optional.
type Clear struct {
	Reason string `json:"reason,omitempty"`
}

// Restart is the payload of participant/restart; the payload is optional.
type Restart struct {
	Reason string `json:"reason,omitempty"`
	Mode   string `json:"mode,omitempty"` // reference SDK hint
}

// Shutdown is the payload of participant/shutdown; the payload is optional.
type Shutdown struct {
	Reason string `json:"reason,omitempty"`
}

// StreamRequest is the payload of stream/request. The gateway must keep every
// member, custom ones included (they are shown to late joiners), so those are
// kept in Extra.
type StreamRequest struct {
	Direction         string          `json:"direction"` // DirectionUpload or DirectionDownload
	ExpectedSizeBytes int64           `json:"expected_size_bytes,omitempty"`
	Description       string          `json:"description,omitempty"`
	ContentType       string          `json:"content_type,omitempty"`
	Format            string          `json:"format,omitempty"`
	Metadata          json.RawMessage `json:"metadata,omitempty"` // an object
	Target            []string        `json:"target,omitempty"`   // only these receive the frames

	Extra map[string]json.RawMessage `json:"-"`
}

// MarshalJSON writes the known members, then Extra.
func (r StreamRequest) MarshalJSON() ([]byte, error) {
	type plain StreamRequest
	return marshalWithExtra(plain(r), r.Extra)
}

// UnmarshalJSON reads the known members and keeps the others in Extra.
func (r *StreamRequest) UnmarshalJSON(data []byte) error {
	type plain StreamRequest
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	if err != nil {
		return err
	}
	*r = StreamRequest(p)
	r.Extra = extra
	return nil
}

// StreamOpen is the payload of stream/open, in the reference's member order.
type StreamOpen struct {
	StreamID          string   `json:"stream_id"`
	Encoding          string   `json:"encoding,omitempty"` // StreamEncodingText, StreamEncodingBinary
	Owner             string   `json:"owner,omitempty"`
	AuthorizedWriters []string `json:"authorized_writers,omitempty"`
	Target            []string `json:"target,omitempty"`
	Compression       string   `json:"compression,omitempty"`
}

// StreamClose is the payload of stream/close.
type StreamClose struct {
	StreamID string `json:"stream_id,omitempty"`
	Reason   string `json:"reason,omitempty"` // StreamCloseComplete, StreamCloseCancelled, ...
}

// StreamInfo is one entry of a welcome's active_streams: the stream's state
// and every member of the request that opened it, custom ones in Extra.
type StreamInfo struct {
	StreamID          string          `json:"stream_id"`
	Owner             string          `json:"owner"`
	AuthorizedWriters []string        `json:"authorized_writers,omitempty"`
	Created           string          `json:"created"` // RFC 3339
	Direction         string          `json:"direction,omitempty"`
	ExpectedSizeBytes int64           `json:"expected_size_bytes,omitempty"`
	Description       string          `json:"description,omitempty"`
	ContentType       string          `json:"content_type,omitempty"`
	Format            string          `json:"format,omitempty"`
	Metadata          json.RawMessage `json:"metadata,omitempty"`
	Target            []string        `json:"target,omitempty"`

	Extra map[string]json.RawMessage `json:"-"`
}

// Clone returns a deep copy of s: one whose slices and Extra share no
// memory with s, for a copy handed to code that may keep or change it.
func (s StreamInfo) Clone() StreamInfo {
	s.AuthorizedWriters = slices.Clone(s.AuthorizedWriters)
	s.Target = slices.Clone(s.Target)
	s.Metadata = slices.Clone(s.Metadata)
	if s.Extra != nil {
		extra := make(map[string]json.RawMessage, len(s.Extra))
		for k, v := range s.Extra {
			extra[k] = slices.Clone(v)
		}
		s.Extra = extra
	}
	return s
}

// MarshalJSON writes the known members, then Extra.
func (s StreamInfo) MarshalJSON() ([]byte, error) {
	type plain StreamInfo
	return marshalWithExtra(plain(s), s.Extra)
}

// UnmarshalJSON reads the known members and keeps the others in Extra.
func (s *StreamInfo) UnmarshalJSON(data []byte) error {
	type plain StreamInfo
	var p plain
	extra, err := unmarshalWithExtra(data, &p)
	if err != nil {
		return err
	}
	*s = StreamInfo(p)
	s.Extra = extra
	return nil
}

// StreamGrantWrite is the payload of stream/grant-write (reference extension).
type StreamGrantWrite struct {
	StreamID      string `json:"stream_id"`
	ParticipantID string `json:"participant_id"`
	Reason        string `json:"reason,omitempty"`
}

// StreamRevokeWrite is the payload of stream/revoke-write (reference extension).
type StreamRevokeWrite struct {
	StreamID      string `json:"stream_id"`
	ParticipantID string `json:"participant_id"`
	Reason        string `json:"reason,omitempty"`
}

// StreamTransferOwnership is the payload of stream/transfer-ownership
// (reference extension).
type StreamTransferOwnership struct {
	StreamID string `json:"stream_id"`
	NewOwner string `json:"new_owner"`
	Reason   string `json:"reason,omitempty"`
}

// StreamWriteGranted is the payload of stream/write-granted (reference
// extension).
type StreamWriteGranted struct {
	StreamID          string   `json:"stream_id"`
	ParticipantID     string   `json:"participant_id"`
	AuthorizedWriters []string `json:"authorized_writers"`
	Reason            string   `json:"reason,omitempty"`
}

// StreamWriteRevoked is the payload of stream/write-revoked (reference
// extension).
type StreamWriteRevoked struct {
	StreamID          string   `json:"stream_id"`
	ParticipantID     string   `json:"participant_id"`
	AuthorizedWriters []string `json:"authorized_writers"`
	Reason            string   `json:"reason,omitempty"`
}

// StreamOwnershipTransferred is the payload of stream/ownership-transferred
// (reference extension).
type StreamOwnershipTransferred struct {
	StreamID          string   `json:"stream_id"`
	PreviousOwner     string   `json:"previous_owner"`
	NewOwner          string   `json:"new_owner"`
	AuthorizedWriters []string `json:"authorized_writers"`
	Reason            string   `json:"reason,omitempty"`
}

// Chat is the payload of chat.
type Chat struct {
	Text   string `json:"text"`
	Format string `json:"format,omitempty"` // FormatPlain (default) or FormatMarkdown
}

// ChatAcknowledge is the payload of chat/acknowledge.
type ChatAcknowledge struct {
	Status string `json:"status,omitempty"` // ChatAckReceived, "read", "processing", ...
}

// ChatCancel is the payload of chat/cancel.
type ChatCancel struct {
	Reason string `json:"reason,omitempty"`
}

// Reasoning is the payload of reasoning/start, reasoning/thought and
// reasoning/conclusion. The spec defines message; the reference agent sends
// input (start) and reasoning, action, actionInput (thoughts) instead, kept
// here so its traces can be shown.
type Reasoning struct {
	Message     string          `json:"message,omitempty"`
	Input       string          `json:"input,omitempty"`
	Reasoning   string          `json:"reasoning,omitempty"`
	Action      string          `json:"action,omitempty"`
	ActionInput json.RawMessage `json:"actionInput,omitempty"`
}

// ReasoningCancel is the payload of reasoning/cancel.
type ReasoningCancel struct {
	Reason string `json:"reason,omitempty"`
}

// MCPMessage is the JSON-RPC payload of mcp/request, mcp/response and
// mcp/proposal, unchanged from MCP. ID stays raw: JSON-RPC ids are numbers or
// strings and must be echoed exactly.
type MCPMessage struct {
	JSONRPC string          `json:"jsonrpc,omitempty"` // "2.0"
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Withdraw is the payload of mcp/withdraw.
type Withdraw struct {
	Reason string `json:"reason,omitempty"` // Reason* codes
}

// Reject is the payload of mcp/reject.
type Reject struct {
	Reason string `json:"reason,omitempty"` // Reason* codes
}

// RespondingTo is the payload of floor/responding-to.
type RespondingTo struct {
	StartedAt int64 `json:"started_at"` // unix milliseconds when inference began
}

// Yield is the payload of floor/yield, sent to the claimant that lost.
type Yield struct {
	Winner          string `json:"winner"`
	WinnerStartedAt int64  `json:"winner_started_at"` // unix milliseconds
}

// Join is the payload of system/join, the reference CLI's way to join
// (reference extension). Its SDK uses participantId, its CLI participant.
type Join struct {
	Space         string            `json:"space,omitempty"`
	ParticipantID string            `json:"participantId,omitempty"`
	Participant   string            `json:"participant,omitempty"`
	Token         string            `json:"token,omitempty"`
	Capabilities  []json.RawMessage `json:"capabilities,omitempty"` // ignored by gateways
}

// PayloadFor returns a pointer to a new zero payload struct for kind, or nil
// if the kind has no defined payload (system/heartbeat, unknown kinds).
func PayloadFor(kind string) any {
	switch kind {
	case KindMCPRequest, KindMCPResponse, KindMCPProposal:
		return new(MCPMessage)
	case KindMCPWithdraw:
		return new(Withdraw)
	case KindMCPReject:
		return new(Reject)
	case KindReasoningStart, KindReasoningThought, KindReasoningConclusion:
		return new(Reasoning)
	case KindReasoningCancel:
		return new(ReasoningCancel)
	case KindCapabilityGrant:
		return new(Grant)
	case KindCapabilityRevoke:
		return new(Revoke)
	case KindCapabilityGrantAck:
		return new(GrantAck)
	case KindSpaceInvite:
		return new(Invite)
	case KindSpaceInviteAck:
		return new(InviteAck)
	case KindSpaceKick:
		return new(Kick)
	case KindParticipantPause:
		return new(Pause)
	case KindParticipantResume:
		return new(Resume)
	case KindParticipantRequestStatus:
		return new(RequestStatus)
	case KindParticipantStatus:
		return new(Status)
	case KindParticipantForget:
		return new(Forget)
	case KindParticipantCompact:
		return new(Compact)
	case KindParticipantCompactDone:
		return new(CompactDone)
	case KindParticipantClear:
		return new(Clear)
	case KindParticipantRestart:
		return new(Restart)
	case KindParticipantShutdown:
		return new(Shutdown)
	case KindStreamRequest:
		return new(StreamRequest)
	case KindStreamOpen:
		return new(StreamOpen)
	case KindStreamClose:
		return new(StreamClose)
	case KindStreamGrantWrite:
		return new(StreamGrantWrite)
	case KindStreamRevokeWrite:
		return new(StreamRevokeWrite)
	case KindStreamTransferOwnership:
		return new(StreamTransferOwnership)
	case KindStreamWriteGranted:
		return new(StreamWriteGranted)
	case KindStreamWriteRevoked:
		return new(StreamWriteRevoked)
	case KindStreamOwnershipTransferred:
		return new(StreamOwnershipTransferred)
	case KindChat:
		return new(Chat)
	case KindChatAcknowledge:
		return new(ChatAcknowledge)
	case KindChatCancel:
		return new(ChatCancel)
	case KindSystemPresence:
		return new(Presence)
	case KindSystemWelcome:
		return new(Welcome)
	case KindSystemError:
		return new(SystemError)
	case KindSystemJoin:
		return new(Join)
	case KindFloorRespondingTo:
		return new(RespondingTo)
	case KindFloorYield:
		return new(Yield)
	}
	return nil
}

// Approval is the payload of system/approval (extension): the state of a
// proposal an approval rule governs.
type Approval struct {
	Proposal string `json:"proposal"`
	Rule     string `json:"rule"`
	Reason   string `json:"reason,omitempty"` // what the rule is for
	// State is one of the Approval* constants.
	State      string   `json:"state"`
	Proposer   string   `json:"proposer"`
	Approvers  []string `json:"approvers"`   // who may approve now
	Required   int      `json:"required"`    // how many of them must
	ApprovedBy []string `json:"approved_by"` // who has, in order
	Remaining  int      `json:"remaining"`   // how many more must
	Deadline   string   `json:"deadline,omitempty"`
	// By and Message say who settled it and why (rejected, withdrawn).
	By      string `json:"by,omitempty"`
	Message string `json:"message,omitempty"`
}

// The states of an approval (system/approval's state).
const (
	ApprovalAwaiting  = "awaiting"
	ApprovalApproved  = "approved"
	ApprovalRejected  = "rejected"
	ApprovalTimedOut  = "timed_out"
	ApprovalEscalated = "escalated"
	ApprovalWithdrawn = "withdrawn"
	ApprovalFulfilled = "fulfilled"
)
