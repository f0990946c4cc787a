package llm

import (
	"context"
	"encoding/json"
)

// Provider is a language model that answers a conversation. Implementations
// are safe for concurrent use.
type Provider interface {
	// Name says which implementation this is: "openai" or "offline".
	Name() string

	// Complete sends the conversation and returns the model's whole answer.
	// It returns when the answer is in, the context is done (with an error
	// that wraps the context's error) or the request fails.
	Complete(ctx context.Context, req Request) (*Response, error)

	// Stream is Complete, delivering the answer piece by piece as it is
	// generated: onDelta (which may be nil) is called on the calling
	// goroutine for each piece, in order, and never after Stream returns.
	// Stream returns the assembled answer, equal to what the pieces add up
	// to. When it fails midway, the pieces already delivered are not taken
	// back: discard them.
	Stream(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error)
}

// Role says who wrote a [Message].
type Role string

// The roles of a conversation.
const (
	// RoleSystem is the instructions that frame the conversation.
	RoleSystem Role = "system"
	// RoleUser is what a person (or another participant) said.
	RoleUser Role = "user"
	// RoleAssistant is what the model answered, text and tool calls.
	RoleAssistant Role = "assistant"
	// RoleTool is the result of one tool call, named by ToolCallID.
	RoleTool Role = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	Role Role
	// Content is the text. An assistant message that only calls tools may
	// leave it empty; a tool message holds the tool's result here.
	Content string
	// ToolCalls are the calls an assistant message made, as returned in
	// [Response.ToolCalls].
	ToolCalls []ToolCall
	// ToolCallID names the call a tool message answers.
	ToolCallID string
	// Name optionally tells apart several users (for example the
	// participant who spoke). The OpenAI provider replaces characters the
	// API refuses with '_'.
	Name string
}

// Tool is a function the model may call.
type Tool struct {
	// Name is how the model calls it. Any string will do: see the package
	// documentation on names.
	Name string
	// Description tells the model (and the offline provider) what it does.
	Description string
	// Parameters is a JSON Schema of type "object" for the arguments;
	// empty means no arguments.
	Parameters json.RawMessage
}

// ToolCall is the model asking for one tool to be run.
type ToolCall struct {
	// ID names the call; the tool message carrying its result repeats it
	// in ToolCallID.
	ID string
	// Name is the tool's name as given in [Request.Tools].
	Name string
	// Arguments is always valid JSON: normally the object the model wrote,
	// {} when it wrote nothing. A model that writes something that is not
	// JSON gets its text back here as a JSON string, so that decoding into
	// an object fails with a clear error and the text is kept for the
	// model to see.
	Arguments json.RawMessage
}

// Request is one call to a model.
type Request struct {
	// Model overrides the provider's configured model when not empty.
	Model string
	// Messages is the conversation so far, oldest first.
	Messages []Message
	// Tools the model may call; none means a plain answer.
	Tools []Tool
	// Temperature, when set, is the sampling temperature.
	Temperature *float64
	// MaxTokens, when positive, caps the length of the answer.
	MaxTokens int
}

// FinishReason says why the model stopped.
type FinishReason string

// The reasons a model stops. Servers may send others; compare with these and
// treat anything else as [FinishStop].
const (
	// FinishStop is a natural end of the answer.
	FinishStop FinishReason = "stop"
	// FinishToolCalls is an answer that calls tools.
	FinishToolCalls FinishReason = "tool_calls"
	// FinishLength is an answer cut off by MaxTokens or the context size.
	FinishLength FinishReason = "length"
	// FinishContentFilter is an answer withheld by the server's filter.
	FinishContentFilter FinishReason = "content_filter"
	// FinishIncomplete is an answer that says the model could not do what
	// was asked, and why (the offline provider, when it cannot fill a
	// tool's arguments from the request). Callers that check a run's
	// success, such as `mew agent tool-test`, count it as a failure.
	FinishIncomplete FinishReason = "incomplete"
)

// Usage counts the tokens of one call, as the server reports them (the
// offline provider estimates them from the length of the text).
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
}

// Response is the model's answer.
type Response struct {
	// Content is the text of the answer; it may be empty when the model
	// calls tools.
	Content string
	// Reasoning is the model's own account of its thinking when it gives
	// one (reasoning models served with a "reasoning_content" or
	// "reasoning" field; the offline provider's rule trace), else empty.
	Reasoning string
	// ToolCalls are the tools the model wants run, in order. When there
	// are any, FinishReason is [FinishToolCalls].
	ToolCalls []ToolCall
	// FinishReason says why the model stopped.
	FinishReason FinishReason
	// Usage counts the tokens, when the server reports them.
	Usage Usage
	// Model is the model that answered, as the server names it.
	Model string
}

// Delta is one piece of a streamed answer. Exactly one of its fields is set.
type Delta struct {
	// Content is more text of the answer.
	Content string
	// Reasoning is more of the model's reasoning.
	Reasoning string
	// ToolCall is a piece of a tool call.
	ToolCall *ToolCallDelta
}

// ToolCallDelta is a piece of one tool call in a stream. The pieces of a call
// share its Index; ID and Name come in the first piece, and the Arguments
// fragments, concatenated, make the call's arguments.
type ToolCallDelta struct {
	// Index is the call's position in [Response.ToolCalls].
	Index int
	// ID and Name are set in the call's first piece.
	ID, Name string
	// Arguments is the next fragment of the arguments' JSON text.
	Arguments string
}
