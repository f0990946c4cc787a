package clusterlink

import (
	"encoding/json"
	"slices"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/protocol"
)

// Newer reports whether connection a was made after b: the later Since, a
// tie broken by the greater Conn. Every node decides the same way between
// two entries, whichever order their writes landed in, so that of two
// connections of one participant made at once on two nodes exactly one
// stays.
func Newer(a, b cluster.Member) bool {
	return a.Since.After(b.Since) || (a.Since.Equal(b.Since) && a.Conn > b.Conn)
}

// Info is what a welcome lists of a participant connected on another node:
// the entry's own info, or its ids when that is unreadable.
func Info(m cluster.Member) protocol.ParticipantInfo {
	var info protocol.ParticipantInfo
	if json.Unmarshal(m.Info, &info) != nil || info.ID == "" {
		id := m.RuntimeID
		if id == "" {
			id = m.Participant
		}
		info = protocol.ParticipantInfo{ID: id}
	}
	return info
}

// Remote is the participants connected to other nodes, by logical name.
type Remote map[string]cluster.Member

// Infos lists them for a welcome, by name, leaving out those here says are
// connected to this node meanwhile (their entries are on their way).
func (r Remote) Infos(here func(name string) bool) []protocol.ParticipantInfo {
	names := make([]string, 0, len(r))
	for name := range r {
		if !here(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	var list []protocol.ParticipantInfo
	for _, name := range names {
		list = append(list, Info(r[name]))
	}
	return list
}
