package participant

// requestTable tracks requests and proposals awaiting an answer.
type requestTable struct{}

func (p *Participant) wireRequests() {}
