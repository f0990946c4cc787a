package participant

// toolRegistry holds the participant's own tools and resources.
type toolRegistry struct{}

func (p *Participant) wireTools() {}
