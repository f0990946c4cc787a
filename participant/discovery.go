package participant

// discoveryState tracks the tools of the other participants.
type discoveryState struct{}

func (p *Participant) wireDiscovery() {}
