package participant

// streamBook tracks the space's streams and this participant's requests.
type streamBook struct{}

func (p *Participant) wireStreams() {}
