package cluster

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// This file is the one place that defines how shared state is spelled: the
// State keys and the encoded records stored under them and in Presence. A
// record read from the fabric was written by another node, which may run a
// different version or be buggy, so every Decode checks the size, the
// syntax and the fields it needs, and answers an error wrapping ErrInvalid,
// never a panic.

// Key prefixes of a space's State.
const (
	prefixGrant    = "grant"
	prefixInvite   = "invite"
	prefixControl  = "control"
	prefixStream   = "stream"
	prefixFloor    = "floor"
	prefixAlias    = "alias"
	prefixApproval = "approval"
)

// GrantKey is the key of a runtime grant to participant.
func GrantKey(participant, grantID string) string {
	return prefixGrant + "/" + participant + "/" + grantID
}

// InviteKey is the key of the invitation of participant.
func InviteKey(participant string) string { return prefixInvite + "/" + participant }

// ControlKey is the key of participant's pause, shutdown and kick state.
func ControlKey(participant string) string { return prefixControl + "/" + participant }

// StreamKey is the key of an open stream.
func StreamKey(streamID string) string { return prefixStream + "/" + streamID }

// FloorKey is the key of the floor claim on a message.
func FloorKey(messageID string) string { return prefixFloor + "/" + messageID }

// AliasKey is the key of a runtime id bound to a participant (an id other
// than its logical name).
func AliasKey(runtimeID string) string { return prefixAlias + "/" + runtimeID }

// ApprovalKey is the key of a proposal governed by the space's approval
// policy; ApprovalVoteKey that of an approver's approval of it in phase
// (0, the rule's approvers; 1, the escalation's); ApprovalEndKey that of
// the end of a phase (phase 2 follows the approval: its end is the
// fulfilment, a rejection or a withdrawal). Proposal ids are chosen by
// participants and may hold any character, so a key names a proposal by a
// digest of its id; the records name it in full.
func ApprovalKey(proposal string) string { return prefixApproval + "/" + digest(proposal) }

// ApprovalVoteKey: see ApprovalKey.
func ApprovalVoteKey(proposal string, phase int, approver string) string {
	return fmt.Sprintf("%s/%s/v%d/%s", prefixApproval, digest(proposal), phase, approver)
}

// ApprovalEndKey: see ApprovalKey.
func ApprovalEndKey(proposal string, phase int) string {
	return fmt.Sprintf("%s/%s/e%d", prefixApproval, digest(proposal), phase)
}

// ApprovalOf returns the digest segment of an approval key (what names its
// proposal), or "".
func ApprovalOf(key string) string {
	kind, rest, _ := strings.Cut(key, "/")
	if kind != prefixApproval {
		return ""
	}
	d, _, _ := strings.Cut(rest, "/")
	return d
}

// digest is a proposal id as a key segment.
func digest(id string) string {
	h := sha256.Sum256([]byte(id))
	return base64.RawURLEncoding.EncodeToString(h[:18])
}

// KeyKind returns the first segment of key ("grant", "invite", "control",
// "stream", "floor", "alias"), by which a watcher dispatches a change.
func KeyKind(key string) string {
	kind, _, _ := strings.Cut(key, "/")
	return kind
}

// CheckName reports whether s can name a space, node, participant, or be a
// key segment: 1 to MaxNameLen bytes of valid UTF-8 without '/' or NUL.
func CheckName(s string) error {
	if s == "" || len(s) > MaxNameLen || !utf8.ValidString(s) || strings.ContainsAny(s, "/\x00") {
		return fmt.Errorf("%w: name %.40q", ErrInvalid, s)
	}
	return nil
}

// CheckKeep reports whether Keeper.Keep may take these arguments: a space
// CheckName accepts, a prefix of at most MaxKeepPrefix bytes, and a record
// (prefix and data) of at most MaxRecordLen bytes.
func CheckKeep(space string, prefix, data []byte) error {
	if err := CheckName(space); err != nil {
		return err
	}
	if len(prefix) > MaxKeepPrefix || len(prefix)+len(data) > MaxRecordLen {
		return fmt.Errorf("%w: keep %d+%d bytes", ErrInvalid, len(prefix), len(data))
	}
	return nil
}

// CheckKey reports whether key is a valid State key: segments checked by
// CheckName, separated by '/', at most MaxKeyLen bytes in all.
func CheckKey(key string) error {
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: key of %d bytes", ErrInvalid, len(key))
	}
	for seg := range strings.SplitSeq(key, "/") {
		if err := CheckName(seg); err != nil {
			return fmt.Errorf("%w: key %.60q", ErrInvalid, key)
		}
	}
	return nil
}

// Member is a participant's presence: where its one live connection is.
type Member struct {
	Participant string          `json:"participant"` // logical id
	Node        string          `json:"node"`        // the node holding the connection
	Conn        string          `json:"conn"`        // the connection, unique in the cluster
	RuntimeID   string          `json:"runtime_id,omitempty"`
	Since       time.Time       `json:"since"`
	Info        json.RawMessage `json:"info,omitempty"` // what the welcome lists of it
}

// Grant is a runtime capability grant in force.
type Grant struct {
	ID           string            `json:"id"` // the grant envelope's id
	To           string            `json:"to"` // logical participant
	From         string            `json:"from"`
	At           time.Time         `json:"at"`
	Expires      time.Time         `json:"expires,omitzero"` // zero: until revoked
	Capabilities []json.RawMessage `json:"capabilities"`
	// Session: the grant ends when its granter has been gone from the
	// space for the gateways' grace period.
	Session bool `json:"session,omitempty"`
	// Links say, per capability, what covered it in the granter's
	// capabilities when it was granted: its provenance. A node enforces a
	// grant only while its links hold (see the gateway's provenance.go).
	Links []GrantLink `json:"links"`
}

// GrantLink is the provenance of one granted capability.
type GrantLink struct {
	Pattern json.RawMessage `json:"pattern"`         // the granter's covering pattern
	Grant   string          `json:"grant,omitempty"` // set when that pattern was itself granted: the parent grant
	Entry   bool            `json:"entry,omitempty"` // covered by the space's entry level
}

// Invite is an invitation: a participant that joins with the token whose
// SHA-256 is TokenHash.
type Invite struct {
	Participant  string            `json:"participant"`
	From         string            `json:"from"`
	At           time.Time         `json:"at"`
	TokenHash    []byte            `json:"token_hash"` // never the token itself
	Capabilities []json.RawMessage `json:"capabilities"`
	Reason       string            `json:"reason,omitempty"` // what the inviter said, for the presence event
}

// Alias binds a runtime id to the participant that used it first, in the
// whole cluster.
type Alias struct {
	ID          string `json:"id"`          // the runtime id
	Participant string `json:"participant"` // logical participant
}

// Control is a participant's pause, shutdown and kick state.
type Control struct {
	Participant string `json:"participant"`
	PausedUntil int64  `json:"paused_until,omitempty"` // unix ns; 0: not paused; MaxInt64: until resumed
	PauseID     string `json:"pause_id,omitempty"`
	Shutdown    bool   `json:"shutdown,omitempty"`
	Kicked      bool   `json:"kicked,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// Stream is an open stream: who owns it, who may write, who receives.
type Stream struct {
	ID        string          `json:"id"`
	Seq       uint64          `json:"seq"`
	Owner     string          `json:"owner"`        // as others see it
	OwnerOf   string          `json:"owner_member"` // logical owner
	Writers   []string        `json:"writers,omitempty"`
	Target    []string        `json:"target,omitempty"`
	Request   json.RawMessage `json:"request,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
	OpenID    string          `json:"open_id,omitempty"`
	Created   time.Time       `json:"created"`
}

// Claim is a floor claim on a message.
type Claim struct {
	Holder    string    `json:"holder"` // logical participant
	ID        string    `json:"id"`     // the holder's runtime id when it claimed
	StartedAt int64     `json:"started_at"`
	Expires   time.Time `json:"expires"`
	// Revision is the revision of the key that holds the claim, as
	// ClaimFloor wrote or read it (0 when not known); it is not stored.
	Revision uint64 `json:"-"`
}

// Beats reports whether claim c wins the floor over d: the earliest
// StartedAt, ties broken by the smaller id.
func (c Claim) Beats(d Claim) bool {
	return c.StartedAt < d.StartedAt || (c.StartedAt == d.StartedAt && c.ID < d.ID)
}

// Approval is a proposal the space's approval policy governs, stored by
// the node that accepted it; the first stored under its key wins.
type Approval struct {
	Proposal     string    `json:"proposal"`
	Rule         string    `json:"rule"`
	Proposer     string    `json:"proposer"`      // its runtime id
	ProposerName string    `json:"proposer_name"` // its logical participant
	Call         string    `json:"call"`          // the method and params approved, as the gateway binds them
	To           []string  `json:"to,omitempty"`
	Deadline     time.Time `json:"deadline,omitzero"`
	Node         string    `json:"node"`
}

// ApprovalVote is an approver's approval, stored by the approver's node.
type ApprovalVote struct {
	Proposal string `json:"proposal"`
	Phase    int    `json:"phase"`
	Approver string `json:"approver"` // logical participant
	Node     string `json:"node"`
}

// ApprovalEnd ends a phase of a governed proposal: the first end stored for
// a phase is the one every node applies.
type ApprovalEnd struct {
	Proposal string    `json:"proposal"`
	Phase    int       `json:"phase"`
	State    string    `json:"state"`
	By       string    `json:"by,omitempty"`
	Message  string    `json:"message,omitempty"`
	Votes    []string  `json:"votes,omitempty"`   // with state approved: who approved
	Deadline time.Time `json:"deadline,omitzero"` // with state escalated: the escalation's
	Node     string    `json:"node"`
}

// Encode returns v's encoded form. It fails on a value over MaxValueLen.
func Encode[T Member | Grant | Invite | Control | Stream | Claim | Alias | Approval | ApprovalVote | ApprovalEnd](v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cluster: encode %T: %w", v, err)
	}
	if len(b) > MaxValueLen {
		return nil, fmt.Errorf("%w: %T of %d bytes", ErrInvalid, v, len(b))
	}
	return b, nil
}

func decode[T any](b []byte, check func(*T) error) (T, error) {
	var v T
	if len(b) > MaxValueLen {
		return v, fmt.Errorf("%w: %T of %d bytes", ErrInvalid, v, len(b))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("%w: %T: %w", ErrInvalid, v, err)
	}
	if dec.More() {
		return v, fmt.Errorf("%w: %T: trailing data", ErrInvalid, v)
	}
	if err := check(&v); err != nil {
		return v, fmt.Errorf("%w: %T: %w", ErrInvalid, v, err)
	}
	return v, nil
}

func names(ss ...string) error {
	for _, s := range ss {
		if err := CheckName(s); err != nil {
			return err
		}
	}
	return nil
}

// JoinRecord is what an implementation's Presence.Join stores for m, joined
// to space on node: m stamped with node (and now, when it has no Since),
// encoded, and checked as a watcher will decode it.
func JoinRecord(space, node string, m Member) ([]byte, error) {
	m.Node = node
	if m.Since.IsZero() {
		m.Since = time.Now()
	}
	if err := CheckName(space); err != nil {
		return nil, err
	}
	v, err := Encode(m)
	if err != nil {
		return nil, err
	}
	if _, err := DecodeMember(v); err != nil {
		return nil, err
	}
	return v, nil
}

// DecodeMember decodes a presence record.
func DecodeMember(b []byte) (Member, error) {
	return decode(b, func(m *Member) error { return names(m.Participant, m.Node, m.Conn) })
}

// DecodeGrant decodes a grant record.
func DecodeGrant(b []byte) (Grant, error) {
	return decode(b, func(g *Grant) error {
		switch {
		case len(g.Links) != len(g.Capabilities):
			return fmt.Errorf("grant with %d capabilities and %d links", len(g.Capabilities), len(g.Links))
		case g.To == g.From:
			return fmt.Errorf("grant of %s to itself", g.To)
		}
		for _, l := range g.Links {
			if p := bytes.TrimSpace(l.Pattern); len(p) == 0 || p[0] != '{' || (l.Grant != "" && l.Entry) {
				return fmt.Errorf("grant link %s", l.Pattern)
			}
			if l.Grant != "" {
				if err := names(l.Grant); err != nil {
					return err
				}
			}
		}
		return names(g.ID, g.To, g.From)
	})
}

// DecodeInvite decodes an invitation record.
func DecodeInvite(b []byte) (Invite, error) {
	return decode(b, func(i *Invite) error {
		if len(i.TokenHash) != 32 {
			return fmt.Errorf("token hash of %d bytes", len(i.TokenHash))
		}
		return names(i.Participant, i.From)
	})
}

// DecodeControl decodes a control record.
func DecodeControl(b []byte) (Control, error) {
	return decode(b, func(c *Control) error {
		if c.PausedUntil < 0 {
			return fmt.Errorf("paused_until %d", c.PausedUntil)
		}
		return names(c.Participant)
	})
}

// DecodeStream decodes a stream record.
func DecodeStream(b []byte) (Stream, error) {
	return decode(b, func(s *Stream) error { return names(s.ID, s.Owner, s.OwnerOf) })
}

// DecodeAlias decodes a runtime id's binding.
func DecodeAlias(b []byte) (Alias, error) {
	return decode(b, func(a *Alias) error { return names(a.ID, a.Participant) })
}

// DecodeClaim decodes a floor claim.
func DecodeClaim(b []byte) (Claim, error) {
	return decode(b, func(c *Claim) error { return names(c.Holder, c.ID) })
}

// DecodeApproval decodes a governed proposal.
func DecodeApproval(b []byte) (Approval, error) {
	return decode(b, func(a *Approval) error {
		if len(a.Call) == 0 || a.Rule == "" {
			return fmt.Errorf("approval of %q without its rule or call", a.Proposal)
		}
		if err := names(a.To...); err != nil {
			return err
		}
		return names(a.Proposal, a.Proposer, a.ProposerName, a.Node)
	})
}

// DecodeApprovalVote decodes an approval.
func DecodeApprovalVote(b []byte) (ApprovalVote, error) {
	return decode(b, func(v *ApprovalVote) error {
		if v.Phase < 0 || v.Phase > 1 {
			return fmt.Errorf("vote in phase %d", v.Phase)
		}
		return names(v.Proposal, v.Approver, v.Node)
	})
}

// DecodeApprovalEnd decodes the end of a phase.
func DecodeApprovalEnd(b []byte) (ApprovalEnd, error) {
	return decode(b, func(e *ApprovalEnd) error {
		if e.Phase < 0 || e.Phase > 2 || e.State == "" {
			return fmt.Errorf("end of phase %d as %q", e.Phase, e.State)
		}
		if err := names(e.Votes...); err != nil {
			return err
		}
		return names(e.Proposal, e.Node)
	})
}
