package agent

import (
	"encoding/json"
	"fmt"
)

// MergeJSON sets the fields of c that a JSON object such as the reference
// agent's MEW_AGENT_CONFIG names, leaving the others as they are: name,
// systemPrompt, model, reasoningEnabled, autoRespond, maxIterations,
// conversationHistoryLength (0 there means no history, as in the reference,
// and sets HistoryLength to -1) and messageQueue.maxQueueSize. Other members
// (the reference's apiKey, baseURL, logLevel, prompts, chatResponse...) are
// ignored; the model's endpoint is the provider's business.
func (c *Config) MergeJSON(data []byte) error {
	var in struct {
		Name                      *string `json:"name"`
		SystemPrompt              *string `json:"systemPrompt"`
		Model                     *string `json:"model"`
		ReasoningEnabled          *bool   `json:"reasoningEnabled"`
		AutoRespond               *bool   `json:"autoRespond"`
		MaxIterations             *int    `json:"maxIterations"`
		ConversationHistoryLength *int    `json:"conversationHistoryLength"`
		MessageQueue              *struct {
			MaxQueueSize *int `json:"maxQueueSize"`
		} `json:"messageQueue"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("agent: config: %w", err)
	}
	if in.Name != nil {
		c.Name = *in.Name
	}
	if in.SystemPrompt != nil {
		c.SystemPrompt = *in.SystemPrompt
	}
	if in.Model != nil {
		c.Model = *in.Model
	}
	if in.ReasoningEnabled != nil {
		c.ReasoningEnabled = *in.ReasoningEnabled
	}
	if in.AutoRespond != nil {
		c.AutoRespond = *in.AutoRespond
	}
	if in.MaxIterations != nil {
		c.MaxIterations = *in.MaxIterations
	}
	if n := in.ConversationHistoryLength; n != nil {
		c.HistoryLength = *n
		if *n == 0 {
			c.HistoryLength = -1
		}
	}
	if q := in.MessageQueue; q != nil && q.MaxQueueSize != nil {
		c.QueueSize = *q.MaxQueueSize
	}
	return nil
}
