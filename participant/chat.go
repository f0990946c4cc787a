package participant

// chatBook tracks chats awaiting acknowledgement.
type chatBook struct{}

func (p *Participant) wireChat() {}
