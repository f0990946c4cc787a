package summary

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/mew-protocol/mew/protocol"
)

// Step says what a reasoning step is doing: "calling calculator/add" (the
// tools of its action input, one or a list of them), "answering", its
// message when it has no action, or its action. White space is folded; the
// text is not clipped.
func Step(p *protocol.Reasoning) string {
	var calls []struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(p.ActionInput, &calls) == nil && len(calls) > 0 {
		names := make([]string, 0, len(calls))
		for _, c := range calls {
			names = append(names, c.Name)
		}
		return "calling " + strings.Join(names, ", ")
	}
	var one struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(p.ActionInput, &one) == nil && one.Name != "" {
		return "calling " + one.Name
	}
	switch p.Action {
	case "":
		if p.Message != "" {
			return fold(p.Message)
		}
		return "answering"
	case "respond", "final_answer", "answer":
		return "answering"
	}
	return fold(p.Action)
}

// Result says what an MCP tool result holds: the text of its content items
// one a line (an item of another type as "[image]" and the like), or, when
// it has no content, the result as compact JSON; and whether it is an
// error (isError).
func Result(raw json.RawMessage) (text string, isError bool) {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if json.Unmarshal(raw, &r) == nil && len(r.Content) > 0 {
		texts := make([]string, 0, len(r.Content))
		for _, c := range r.Content {
			if c.Type == "text" {
				texts = append(texts, c.Text)
			} else {
				texts = append(texts, "["+c.Type+"]")
			}
		}
		return strings.Join(texts, "\n"), r.IsError
	}
	return Compact(raw), false
}

// Compact returns raw as compact JSON, or as it is when it is not JSON.
func Compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func fold(s string) string { return strings.Join(strings.Fields(s), " ") }
