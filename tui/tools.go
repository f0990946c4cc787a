package tui

import (
	"encoding/json"
	"strings"

	"github.com/mew-protocol/mew/protocol"
)

// toolCatalog is the tools seen in tools/list answers, for Tab completion
// of /envelope: their names by participant and an argument skeleton from
// each schema. It owns them; the root hands it the listings.
type toolCatalog struct {
	lists   map[string]string            // tools/list request ids → the participant listed
	schemas map[string]map[string]string // participant → tool → argument skeleton
}

// bounds of what is remembered of tools.
const (
	maxToolOwners = 256
	maxToolsEach  = 256
)

// noteListing remembers that request id (from anyone) lists target's tools.
func (c *toolCatalog) noteListing(env *protocol.Envelope, method string) {
	if method != "tools/list" || len(env.To) != 1 || env.ID == "" {
		return
	}
	if c.lists == nil {
		c.lists = map[string]string{}
	}
	if len(c.lists) < maxRequests {
		c.lists[env.ID] = env.To[0]
	}
}

// toolsListed takes in a tools/list answer to a listing noted before: the
// tools of its sender.
func (c *toolCatalog) listed(env *protocol.Envelope, id string) {
	target, ok := c.lists[id]
	if !ok || target != env.From {
		return
	}
	delete(c.lists, id)
	var msg protocol.MCPMessage
	if env.DecodePayload(&msg) != nil {
		return
	}
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(msg.Result, &r) != nil {
		return
	}
	if c.schemas == nil {
		c.schemas = map[string]map[string]string{}
	}
	if _, known := c.schemas[target]; !known && len(c.schemas) >= maxToolOwners {
		return
	}
	tools := map[string]string{}
	for _, t := range r.Tools {
		if len(tools) == maxToolsEach {
			break
		}
		if name := strings.TrimSpace(t.Name); name != "" && !strings.ContainsAny(name, " \n\t") {
			tools[name] = skeleton(t.InputSchema)
		}
	}
	c.schemas[target] = tools
}

// skeleton writes a JSON object with each property of an input schema and
// a value of its type: what the user fills in.
func skeleton(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type json.RawMessage `json:"type"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return "{}"
	}
	obj := make(map[string]any, len(s.Properties))
	for k, p := range s.Properties {
		var typ string
		_ = json.Unmarshal(p.Type, &typ)
		switch typ {
		case "number", "integer":
			obj[k] = 0
		case "boolean":
			obj[k] = false
		case "array":
			obj[k] = []any{}
		case "object":
			obj[k] = map[string]any{}
		case "null":
			obj[k] = nil
		default:
			obj[k] = ""
		}
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// candidates are the completions of word number n (from 0) of an
// /envelope line: its fixed words, a participant (of present), one of its
// tools, and the tool's argument skeleton.
func (c *toolCatalog) candidates(words []string, n int, present []string) []string {
	switch n {
	case 1:
		return []string{protocol.KindMCPRequest}
	case 2:
		return []string{"tools/call"}
	case 3:
		return present
	case 4:
		return sortedKeys(c.schemas[strings.TrimPrefix(words[3], "@")])
	case 5:
		if sk, ok := c.schemas[strings.TrimPrefix(words[3], "@")][words[4]]; ok {
			return []string{sk}
		}
	}
	return nil
}
