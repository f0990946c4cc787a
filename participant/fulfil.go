package participant

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// FulfillWith carries out another participant's proposal as Fulfill does,
// with params in place of the proposal's: the fulfiller changed the call
// (a path, an argument) before approving it. params must be a JSON object;
// for tools/call it holds the tool's name and its arguments. The request
// keeps the proposal's method, target and correlation, so the proposer sees
// the answer to its proposal, and the proposal is settled as approved.
func (p *Participant) FulfillWith(ctx context.Context, pr *Proposal, params json.RawMessage) (json.RawMessage, error) {
	if pr == nil || pr.Envelope == nil {
		return nil, errors.New("participant: fulfil: no proposal")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(params, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("participant: fulfil proposal %s: the edited params are not a JSON object", pr.ID())
	}
	var payload map[string]json.RawMessage
	if err := json.Unmarshal(pr.Envelope.Payload, &payload); err != nil || payload == nil {
		return nil, fmt.Errorf("participant: fulfil proposal %s: its payload is not a JSON object", pr.ID())
	}
	payload["params"] = params
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("participant: fulfil proposal %s: %w", pr.ID(), err)
	}
	return p.fulfil(ctx, pr, body)
}

// fulfil sends payload as the mcp/request that carries out pr: claimed
// first, so that nobody here decides it twice, and released again when the
// request never reached the space.
func (p *Participant) fulfil(ctx context.Context, pr *Proposal, payload json.RawMessage) (json.RawMessage, error) {
	to := pr.To()
	if len(to) == 0 {
		return nil, fmt.Errorf("participant: fulfil proposal %s: it names no target", pr.ID())
	}
	body, method, err := p.pending.rpcPayload(payload)
	if err != nil {
		return nil, fmt.Errorf("participant: fulfil proposal %s: %w", pr.ID(), err)
	}
	if !p.CanSendTo(protocol.KindMCPRequest, to, body) {
		return nil, fmt.Errorf("participant: fulfil proposal %s (%s): %w", pr.ID(), method, ErrNotAllowed)
	}
	serial := p.pending.claims.Add(1)
	if err := pr.claim(ProposalStatus{Settlement: Approved, By: p.ID(), At: time.Now()}, serial); err != nil {
		return nil, err
	}
	sent := false
	res, err := p.roundTrip(ctx, protocol.KindMCPRequest, to, []string{pr.ID()}, RequestOptions{}, body, func() { sent = true })
	var refused *GatewayError
	if !sent || errors.As(err, &refused) {
		pr.unclaim(serial)
	} else {
		pr.done(serial)
	}
	return res, err
}

// rejection is the payload of an mcp/reject: the spec's reason code, and a
// person's words in message when they gave any.
type rejection struct {
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// RejectWith declines another participant's proposal as Reject does, with
// a reason code (one of the protocol.Reason* codes, "" for none) and a
// free text for the proposer's reader (payload member "message", left out
// when empty; the spec's reason stays a code that programs can act on).
func (p *Participant) RejectWith(ctx context.Context, pr *Proposal, reason, message string) error {
	if pr == nil || pr.Envelope == nil {
		return errors.New("participant: reject: no proposal")
	}
	payload := rejection{Reason: reason, Message: message}
	raw, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("participant: reject proposal %s: %w", pr.ID(), err)
	}
	if !p.CanSendTo(protocol.KindMCPReject, []string{pr.From()}, raw) {
		return fmt.Errorf("participant: reject proposal %s: %w", pr.ID(), ErrNotAllowed)
	}
	serial := p.pending.claims.Add(1)
	if err := pr.claim(ProposalStatus{Settlement: Rejected, By: p.ID(), Reason: reason, At: time.Now()}, serial); err != nil {
		return err
	}
	if _, err := p.send(ctx, protocol.KindMCPReject, []string{pr.From()}, []string{pr.ID()}, payload); err != nil {
		pr.unclaim(serial)
		return fmt.Errorf("participant: reject proposal %s: %w", pr.ID(), err)
	}
	pr.done(serial)
	return nil
}
