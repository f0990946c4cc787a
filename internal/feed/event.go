package feed

import (
	"encoding/json"
	"slices"

	"github.com/mew-protocol/mew/protocol"
)

// Event is what a person may see of one envelope. Each concrete type
// embeds Meta; Type names it as the shared test vectors do.
type Event interface {
	// Type is the event's name in the test vectors: "chat",
	// "proposal_settled", ...
	Type() string
	// Envelope is the envelope the event was read from.
	Envelope() *protocol.Envelope
}

// Meta is what every event says of the envelope it comes from.
type Meta struct {
	Env  *protocol.Envelope `json:"-"`
	ID   string             `json:"id,omitempty"`
	Kind string             `json:"kind"`
	From string             `json:"from,omitempty"`
	To   []string           `json:"to,omitempty"`
}

// Envelope returns the envelope the event was read from.
func (m *Meta) Envelope() *protocol.Envelope { return m.Env }

func metaOf(env *protocol.Envelope) Meta {
	return Meta{Env: env, ID: env.ID, Kind: env.Kind, From: env.From, To: env.To}
}

// Welcome is the gateway's system/welcome: who I am and who is here.
type Welcome struct {
	Meta
	You          string            `json:"you"`
	Participants []string          `json:"participants"`
	Payload      *protocol.Welcome `json:"-"`
}

// Presence is a participant joining, leaving or being invited.
type Presence struct {
	Meta
	Participant string             `json:"participant"`
	Event       string             `json:"event"`
	Payload     *protocol.Presence `json:"-"`
}

// SystemError is the gateway refusing something.
type SystemError struct {
	Meta
	Code          string   `json:"code"`
	Message       string   `json:"message,omitempty"`
	AttemptedKind string   `json:"attempted_kind,omitempty"`
	Correlation   []string `json:"correlation,omitempty"`
}

// Chat is a chat message.
type Chat struct {
	Meta
	Text        string   `json:"text"`
	Format      string   `json:"format,omitempty"`
	Correlation []string `json:"correlation,omitempty"`
}

// ChatAcked is a chat/acknowledge of the chats it correlates to.
type ChatAcked struct {
	Meta
	Chats  []string `json:"chats,omitempty"`
	Status string   `json:"status,omitempty"`
}

// Request is an mcp/request. A listing (discovery, set-up, notifications)
// is bookkeeping rather than something a person asked for.
type Request struct {
	Meta
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
	Listing bool            `json:"listing,omitempty"`
	// Tool is what a tools/call calls: "calculator/add" when it has one
	// recipient, else the tool's name.
	Tool string `json:"tool,omitempty"`
	// Proposal is the id of the proposal the request fulfils, when it
	// correlates to one this reader saw.
	Proposal string `json:"proposal,omitempty"`
}

// Response is an mcp/response, paired with its request when the request
// was seen and the response comes from one of its addressees, first.
type Response struct {
	Meta
	// Request is the id of the request answered; "" when unpaired.
	Request string `json:"request,omitempty"`
	// Method and Listing are the request's.
	Method  string             `json:"method,omitempty"`
	Listing bool               `json:"listing,omitempty"`
	Result  json.RawMessage    `json:"result,omitempty"`
	Error   *protocol.RPCError `json:"error,omitempty"`
	// IsError is the JSON-RPC error or the tool result's isError.
	IsError bool `json:"is_error,omitempty"`
}

// Proposal is an mcp/proposal: an operation for someone else to fulfil.
type Proposal struct {
	Meta
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
	Tool   string          `json:"tool,omitempty"`
}

// Outcomes of a proposal.
const (
	Approved  = "approved"
	Rejected  = "rejected"
	Withdrawn = "withdrawn"
	TimedOut  = "timed_out" // its proposer withdrew it: nobody decided in time
)

// ProposalSettled says how an open proposal was settled, and by whom.
type ProposalSettled struct {
	Meta
	Proposal string `json:"proposal"`
	Outcome  string `json:"outcome"` // Approved, Rejected, Withdrawn, TimedOut
	By       string `json:"by"`
	Reason   string `json:"reason,omitempty"`
	// Message is a person's words with a rejection.
	Message string `json:"message,omitempty"`
	// Edited: the approving request's arguments differ from the proposal's.
	Edited bool `json:"edited,omitempty"`
}

// Approval is the gateway's word on a proposal the space's approval policy
// governs (system/approval, docs/approvals.md): its state, the rule and
// why, who may approve now, how many more must.
type Approval struct {
	Meta
	Proposal   string   `json:"proposal"`
	Rule       string   `json:"rule"`
	Reason     string   `json:"reason,omitempty"`
	State      string   `json:"state"`
	Proposer   string   `json:"proposer,omitempty"`
	Approvers  []string `json:"approvers"`
	Required   int      `json:"required"`
	ApprovedBy []string `json:"approved_by"`
	Remaining  int      `json:"remaining"`
	Deadline   string   `json:"deadline,omitempty"`
	By         string   `json:"by,omitempty"`
	Message    string   `json:"message,omitempty"`
}

// AwaitsFrom reports whether the proposal awaits an approval from who: it
// is open, who approves now, has not approved yet, and did not propose it.
func (a *Approval) AwaitsFrom(who string) bool {
	return (a.State == protocol.ApprovalAwaiting || a.State == protocol.ApprovalEscalated) &&
		slices.Contains(a.Approvers, who) && !slices.Contains(a.ApprovedBy, who) && a.Proposer != who
}

// Approve is an approver's approval/approve of a governed proposal.
type Approve struct {
	Meta
	Proposal string `json:"proposal"`
}

// ReasoningStarted opens an agent's reasoning.
type ReasoningStarted struct {
	Meta
	Reasoning string `json:"reasoning"`
	// Question is the id of the chat it answers, from the start's
	// correlation.
	Question string `json:"question,omitempty"`
}

// ReasoningStep is progress in an open reasoning: a thought, a tool
// called, a proposal awaiting approval.
type ReasoningStep struct {
	Meta
	Reasoning string `json:"reasoning"`
	Thoughts  int    `json:"thoughts"`
	// Thought is the thought's payload, for a reasoning/thought.
	Thought *protocol.Reasoning `json:"thought,omitempty"`
	// Calling is the tool its reasoner just called; Waiting the tool or
	// method its reasoner proposed and awaits approval of.
	Calling string   `json:"calling,omitempty"`
	Waiting string   `json:"waiting,omitempty"`
	Tools   []string `json:"tools,omitempty"`
}

// Causes of a reasoning's end.
const (
	Concluded = "concluded" // reasoning/conclusion
	Answered  = "answered"  // a chat of its reasoner answering its question
	Cancelled = "cancelled" // reasoning/cancel from its reasoner
	Left      = "left"      // its reasoner left the space
	Evicted   = "evicted"   // too many reasonings open: the oldest is let go
)

// ReasoningEnded closes a reasoning; what it did is summed up.
type ReasoningEnded struct {
	Meta
	Reasoning string   `json:"reasoning"`
	Reasoner  string   `json:"reasoner"`
	Cause     string   `json:"cause"`
	Thoughts  int      `json:"thoughts"`
	Tools     []string `json:"tools,omitempty"`
	Cancelled bool     `json:"cancelled,omitempty"`
	Reason    string   `json:"reason,omitempty"`
}

// Granted is a capability/grant.
type Granted struct {
	Meta
	Recipient    string            `json:"recipient"`
	Capabilities []json.RawMessage `json:"capabilities,omitempty"`
	TTLSeconds   int64             `json:"ttl_seconds,omitempty"`
	ExpiresAt    string            `json:"expires_at,omitempty"`
	Session      bool              `json:"session,omitempty"`
}

// Revoked is a capability/revoke.
type Revoked struct {
	Meta
	Recipient    string            `json:"recipient"`
	Grant        string            `json:"grant,omitempty"`
	Capabilities []json.RawMessage `json:"capabilities,omitempty"`
	Reason       string            `json:"reason,omitempty"`
}

// GrantAcked is a capability/grant-ack of the grants it correlates to.
type GrantAcked struct {
	Meta
	Grants []string `json:"grants,omitempty"`
}

// StreamOpened is the gateway's stream/open.
type StreamOpened struct {
	Meta
	Stream string   `json:"stream"`
	Owner  string   `json:"owner,omitempty"`
	Target []string `json:"target,omitempty"`
}

// StreamClosed is a stream/close.
type StreamClosed struct {
	Meta
	Stream string `json:"stream"`
	Reason string `json:"reason,omitempty"`
}

// Control is one participant steering others: participant/pause, resume,
// shutdown, restart, clear, compact, forget, request-status, and a
// reasoning/cancel asked of another's reasoning.
type Control struct {
	Meta
	Reason         string `json:"reason,omitempty"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty"`
}

// Elicitation is an elicitation/* envelope; the clients' elicitation
// dialogs read its envelope.
type Elicitation struct{ Meta }

// Bookkeeping is an envelope a person need not read (heartbeats, floor
// control, status reports, stream requests, chat cancels).
type Bookkeeping struct{ Meta }

// Other is an envelope of a kind this package does not interpret.
type Other struct {
	Meta
	Payload json.RawMessage `json:"payload,omitempty"`
}

// Spoofed is a gateway-only kind (system/*, floor/yield, stream/open) that did not come
// from the gateway. Nothing of it is to be believed.
type Spoofed struct{ Meta }

// Malformed is an envelope whose payload does not decode as its kind's.
// Nothing of it is taken in.
type Malformed struct {
	Meta
	Err error `json:"-"`
}

// Type names.
func (*Welcome) Type() string          { return "welcome" }
func (*Presence) Type() string         { return "presence" }
func (*SystemError) Type() string      { return "system_error" }
func (*Chat) Type() string             { return "chat" }
func (*ChatAcked) Type() string        { return "chat_acked" }
func (*Request) Type() string          { return "request" }
func (*Response) Type() string         { return "response" }
func (*Proposal) Type() string         { return "proposal" }
func (*ProposalSettled) Type() string  { return "proposal_settled" }
func (*ReasoningStarted) Type() string { return "reasoning_started" }
func (*ReasoningStep) Type() string    { return "reasoning_step" }
func (*ReasoningEnded) Type() string   { return "reasoning_ended" }
func (*Granted) Type() string          { return "granted" }
func (*Revoked) Type() string          { return "revoked" }
func (*GrantAcked) Type() string       { return "grant_acked" }
func (*StreamOpened) Type() string     { return "stream_opened" }
func (*StreamClosed) Type() string     { return "stream_closed" }
func (*Control) Type() string          { return "control" }
func (*Approval) Type() string         { return "approval" }
func (*Approve) Type() string          { return "approve" }
func (*Elicitation) Type() string      { return "elicitation" }
func (*Bookkeeping) Type() string      { return "bookkeeping" }
func (*Other) Type() string            { return "other" }
func (*Spoofed) Type() string          { return "spoofed" }
func (*Malformed) Type() string        { return "malformed" }
