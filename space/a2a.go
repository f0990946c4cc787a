package space

import (
	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/internal/yamlx"
)

// TypeA2ABridge is the type of a participant that is a remote A2A agent
// joined through `mew bridge start --a2a-url`: its a2a_url says where.
const TypeA2ABridge = "a2a-bridge"

// a2aURL reads a2a_url: an http(s) URL without user information (a
// credential goes in the participant's env, never in the file's URL).
func a2aURL(n *yaml.Node, key string) (string, error) {
	return webURL(n, key, "an A2A agent, such as https://agent.example.com/", "give credentials in env (MEW_A2A_BEARER, MEW_A2A_API_KEY)")
}

// participantIDs reads a list of participant ids.
func participantIDs(n *yaml.Node, key string) ([]string, error) {
	ids, err := yamlx.StringList(n, key)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		if err := ValidParticipantID(id); err != nil {
			return nil, yamlx.Errorf(n, yamlx.IndexKey(key, i), "%w", err)
		}
	}
	return ids, nil
}

// checkA2A refuses an a2a-bridge without its URL, and A2A keys on a
// participant of another type.
func checkA2A(n *yaml.Node, key string, part *Participant) error {
	switch {
	case part.Type == TypeA2ABridge && part.A2AURL == "" && part.Command == "":
		return yamlx.Errorf(n, key, "type %s needs a2a_url, the URL of the agent", TypeA2ABridge)
	case part.Type != TypeA2ABridge && (part.A2AURL != "" || part.A2AAnswerers != nil):
		return yamlx.Errorf(n, key, "a2a_url and a2a_answerers are for type: %s", TypeA2ABridge)
	}
	return nil
}
