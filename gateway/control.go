package gateway

import (
	"encoding/json"
	"time"

	"github.com/mew-protocol/mew/protocol"
)

// grant is one capability/grant in force.
type grant struct {
	id   string // the grant envelope's id
	from string // granter's logical name
	caps []json.RawMessage
}

// control is a member's pause, shutdown and kick state.
type control struct{}

func (sp *liveSpace) checkControl(o origin, env *protocol.Envelope, now time.Time) *refusal { return nil }

func (sp *liveSpace) grant(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	return relayed, nil
}

func (sp *liveSpace) revoke(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	return relayed, nil
}

func (sp *liveSpace) invite(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	return relayed, nil
}

func (sp *liveSpace) kick(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	return relayed, nil
}

func (sp *liveSpace) control(o origin, env *protocol.Envelope, now time.Time) (outcome, *refusal) {
	return relayed, nil
}
