package cluster

import (
	"bytes"
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
	prefixGrant   = "grant"
	prefixInvite  = "invite"
	prefixControl = "control"
	prefixStream  = "stream"
	prefixFloor   = "floor"
	prefixAlias   = "alias"
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

// Encode returns v's encoded form. It fails on a value over MaxValueLen.
func Encode[T Member | Grant | Invite | Control | Stream | Claim | Alias](v T) ([]byte, error) {
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
