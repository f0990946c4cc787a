package participant

// controlState is the participant's pause state, hooks and telemetry.
type controlState struct{}

func (p *Participant) wireControls() {}

// allowOutbound refuses what a paused participant may not send.
func (c *controlState) allowOutbound(kind string) error { return nil }
