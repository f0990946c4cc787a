package llm

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
)

// The Chat Completions API as this package speaks it: the request it
// sends and the parts of the answers it reads. Fields a server sends that
// are not here are ignored; fields that some servers send in another shape
// than OpenAI's (content as parts, arguments as an object, reasoning under
// two names) are read as raw JSON and taken leniently.

type wireRequest struct {
	Model               string             `json:"model"`
	Messages            []wireMessage      `json:"messages"`
	Tools               []wireTool         `json:"tools,omitempty"`
	Temperature         *float64           `json:"temperature,omitempty"`
	MaxTokens           int                `json:"max_tokens,omitempty"`
	MaxCompletionTokens int                `json:"max_completion_tokens,omitempty"`
	Stream              bool               `json:"stream,omitempty"`
	StreamOptions       *wireStreamOptions `json:"stream_options,omitempty"`
}

type wireStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireMessage struct {
	Role string `json:"role"`
	// Content is left out only of an assistant message that calls tools
	// and says nothing, as the API allows.
	Content    *string        `json:"content,omitempty"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string          `json:"type"`
	Function json.RawMessage `json:"function"` // the definition as built, its schema as written
}

// wireCompletion is an answer of Complete, and the JSON body some servers
// send for a stream they were asked for.
type wireCompletion struct {
	Model   string `json:"model"`
	Choices []struct {
		Index        int       `json:"index"`
		Message      wireDelta `json:"message"`
		FinishReason string    `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
}

// wireChunk is one event of a stream.
type wireChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index        int       `json:"index"`
		Delta        wireDelta `json:"delta"`
		FinishReason string    `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"` // an error event, as OpenAI and vLLM send mid-stream
}

// wireDelta is a message, or the piece of one that a chunk carries.
type wireDelta struct {
	Content          json.RawMessage `json:"content"`
	ReasoningContent json.RawMessage `json:"reasoning_content"` // DeepSeek, vLLM, llama.cpp
	Reasoning        json.RawMessage `json:"reasoning"`         // Ollama, OpenRouter
	ToolCalls        []struct {
		Index    int64  `json:"index"`
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (u *wireUsage) usage() Usage {
	if u == nil {
		return Usage{}
	}
	return Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

// text reads a content or reasoning value: a string, or the text parts of
// an array of parts; anything else (null, absent) is no text.
func text(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &parts) == nil {
			var b strings.Builder
			for _, p := range parts {
				if p.Type == "" || p.Type == "text" {
					b.WriteString(p.Text)
				}
			}
			return b.String()
		}
	}
	return ""
}

// reasoning is a reasoning model's thinking, under either name.
func (d *wireDelta) reasoning() string {
	if r := text(d.ReasoningContent); r != "" {
		return r
	}
	return text(d.Reasoning)
}

// argumentText reads a call's arguments: the API sends a string of JSON;
// some servers send the JSON object itself.
func argumentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// params translates a request into the API's, with the map between the
// caller's tool names and those sent.
func (p *OpenAI) params(req Request) (*wireRequest, *toolNames, error) {
	w := &wireRequest{Model: cmp.Or(req.Model, p.model)}

	var all []string
	for _, t := range req.Tools {
		all = append(all, t.Name)
	}
	for _, m := range req.Messages {
		for _, tc := range m.ToolCalls {
			all = append(all, tc.Name)
		}
	}
	names := newToolNames(all)

	for i, m := range req.Messages {
		content := m.Content
		wm := wireMessage{Role: string(m.Role), Content: &content}
		switch m.Role {
		case RoleSystem:
		case RoleUser:
			if m.Name != "" {
				wm.Name = speakerName(m.Name)
			}
		case RoleAssistant:
			if m.Content == "" && len(m.ToolCalls) > 0 {
				wm.Content = nil
			}
			for _, tc := range m.ToolCalls {
				wm.ToolCalls = append(wm.ToolCalls, wireToolCall{ID: tc.ID, Type: "function",
					Function: wireFunction{Name: names.wire(tc.Name), Arguments: wireArguments(tc.Arguments)}})
			}
		case RoleTool:
			wm.ToolCallID = m.ToolCallID
		default:
			return nil, nil, fmt.Errorf("llm: message %d: unknown role %q", i, m.Role)
		}
		w.Messages = append(w.Messages, wm)
	}

	for _, t := range req.Tools {
		schema := bytes.TrimSpace(t.Parameters)
		if len(schema) == 0 {
			schema = []byte(`{"type":"object","properties":{}}`)
		} else if schema[0] != '{' || !json.Valid(schema) {
			return nil, nil, fmt.Errorf("llm: tool %q: parameters must be a JSON Schema object", t.Name)
		}
		// The definition goes out as written, keeping the order of the
		// schema's properties, which the model reads.
		def, err := json.Marshal(struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}{names.wire(t.Name), t.Description, schema})
		if err != nil {
			return nil, nil, fmt.Errorf("llm: tool %q: %w", t.Name, err)
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: def})
	}

	w.Temperature = req.Temperature
	if req.MaxTokens > 0 {
		if p.completionTokens {
			w.MaxCompletionTokens = req.MaxTokens
		} else {
			w.MaxTokens = req.MaxTokens
		}
	}
	return w, names, nil
}

// encode is the request's body. HTML characters stay as they are: the
// model reads the bytes.
func (w *wireRequest) encode() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, fmt.Errorf("llm: encode the request: %w", err)
	}
	return b.Bytes(), nil
}
