package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mew-protocol/mew/internal/yamlx"
	"github.com/mew-protocol/mew/llm"
)

// Defaults of Config.
const (
	DefaultMaxIterations       = 10
	DefaultHistoryLength       = 50
	DefaultQueueSize           = 5
	DefaultDiscoveryWait       = 5 * time.Second
	DefaultConfidenceThreshold = 0.5
	DefaultContextWindow       = 10
	DefaultAnswersPerMinute    = 30
	DefaultContextTokenLimit   = 128000
)

// Reasoning formats: how the steps of the ReAct loop so far are given to the
// model.
const (
	// FormatNative gives each tool call as an assistant message with
	// tool_calls and each result as a tool message.
	FormatNative = "native"
	// FormatScratchpad gives the steps as one text ("Reasoning: … Action:
	// … Observation: …"), for models without tool messages in their
	// history.
	FormatScratchpad = "scratchpad"
)

// Config is what the agent does: the reference's AgentConfig, as
// MEW_AGENT_CONFIG or a configuration file give it (see MergeJSON and
// LoadFile for the keys). The zero value of each field means its default.
type Config struct {
	// Name is the agent's display name, which also counts as a mention
	// ("@Name"); empty means none (the participant id always counts).
	Name string
	// SystemPrompt frames every conversation with the model; empty means a
	// short prompt naming the agent and asking it to use the tools.
	// Prompts.System, when set, takes its place.
	SystemPrompt string
	// Model is the model asked for; empty means the provider's.
	Model string
	// APIKey and BaseURL select and configure the model endpoint in
	// Config.Provider; the agent itself does not read them.
	APIKey  string
	BaseURL string
	// MockLLM selects the offline provider in Config.Provider, as the
	// reference's mockLLM does.
	MockLLM bool
	// ReasoningEnabled sends reasoning/start, reasoning/thought and
	// reasoning/conclusion around each answer, and streams the model's
	// output into a reasoning stream when the agent may open one.
	ReasoningEnabled bool
	// ReasoningFormat is FormatNative (default) or FormatScratchpad.
	ReasoningFormat string
	// AutoRespond lets the agent answer broadcast chats that neither
	// address nor mention it, when the classifier says it should (see the
	// package documentation). Without it the agent answers only chats
	// addressed to it and chats that mention it.
	AutoRespond bool
	// MaxIterations bounds the model calls for one chat (default 10).
	MaxIterations int
	// HistoryLength is how many earlier messages (questions and answers) are
	// given to the model (default 50; negative means none).
	HistoryLength int
	// ContextTokenLimit is the model's context size in tokens (default
	// 128000). The agent drops the oldest history before a model call so
	// that the conversation stays below 70% of it, and reports it in its
	// status telemetry.
	ContextTokenLimit int
	// QueueSize bounds the chats waiting to be answered (default 5).
	QueueSize int
	// DiscoveryWait bounds the wait for tool discoveries under way before
	// the model is asked (default 5 s; negative means no wait).
	DiscoveryWait time.Duration
	// ProposalTimeout is how long a proposal of the agent waits for a
	// person to decide it (0: the participant's default, 10 min). The
	// reference's requestTimeout (milliseconds) sets it: its templates
	// raise it to an hour for human review.
	ProposalTimeout time.Duration
	// Prompts overrides the prompts of the phases of an answer.
	Prompts Prompts
	// ChatResponse tunes which chats the agent answers.
	ChatResponse ChatResponse
	// FloorControl tunes how the agent takes the floor before answering a
	// chat that does not address it.
	FloorControl FloorControl
}

// Prompts are templates for the phases of an answer. Placeholders are
// replaced once, in one pass: a value that contains "{input}" is inserted as
// it is, never expanded again. Empty means the default.
type Prompts struct {
	// System replaces Config.SystemPrompt.
	System string
	// Reason is the user message that asks the question: {input} is the
	// chat's text, {tools} the list of tools offered. Default "{input}".
	Reason string
	// Act, when set, follows the results of each round of tool calls as a
	// user message: {objective} is the chat's text, {observation} the
	// round's results, {tools} the tools offered. Default: none.
	Act string
	// Respond, when set, is asked after the loop ends if tools were used:
	// one more call without tools, with this user message, writes the
	// answer. {input} and {objective} are the chat's text, {observation}
	// every result. Default: the model's own last answer is the answer.
	Respond string
	// Classify is the question to the classifier (see ChatResponse):
	// {input} is the chat's text, {name} the agent's, {tools} its tools.
	Classify string
}

// ChatResponse tunes the response policy. Nil booleans mean true.
type ChatResponse struct {
	// RespondToDirect answers chats addressed to the agent.
	RespondToDirect *bool
	// RespondToMentions answers broadcast chats that mention the agent.
	RespondToMentions *bool
	// RespondToQuestions answers a broadcast chat with a question mark
	// when there is no classifier answer (offline model, or the
	// classifier failed).
	RespondToQuestions *bool
	// ConfidenceThreshold is the classifier confidence, from 0 to 1, from
	// which the agent answers (default 0.5).
	ConfidenceThreshold float64
	// ContextWindow is how many of the latest chats of the space the
	// classifier sees (default 10).
	ContextWindow int
	// AnswersPerMinute bounds the broadcast chats that neither address nor
	// mention the agent which it takes up (classifies, and answers if the
	// classifier agrees) in any minute (default 30; negative means no
	// limit). Beyond it such chats are ignored, with a log line, before any
	// model call.
	AnswersPerMinute int
}

// on reports *b, true when b is nil.
func on(b *bool) bool { return b == nil || *b }

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.MaxIterations <= 0 {
		c.MaxIterations = DefaultMaxIterations
	}
	if c.HistoryLength == 0 {
		c.HistoryLength = DefaultHistoryLength
	}
	if c.HistoryLength < 0 {
		c.HistoryLength = 0
	}
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.DiscoveryWait == 0 {
		c.DiscoveryWait = DefaultDiscoveryWait
	}
	if c.ContextTokenLimit <= 0 {
		c.ContextTokenLimit = DefaultContextTokenLimit
	}
	if c.ReasoningFormat == "" {
		c.ReasoningFormat = FormatNative
	}
	r := &c.ChatResponse
	if r.ConfidenceThreshold <= 0 {
		r.ConfidenceThreshold = DefaultConfidenceThreshold
	}
	if r.ContextWindow <= 0 {
		r.ContextWindow = DefaultContextWindow
	}
	if r.AnswersPerMinute == 0 {
		r.AnswersPerMinute = DefaultAnswersPerMinute
	}
	c.FloorControl = c.FloorControl.withDefaults()
	return c
}

// Validate reports the first value of c that cannot work.
func (c Config) Validate() error {
	switch c.ReasoningFormat {
	case "", FormatNative, FormatScratchpad:
	default:
		return fmt.Errorf("agent: config: reasoningFormat %q: want %q or %q", c.ReasoningFormat, FormatNative, FormatScratchpad)
	}
	if f := c.FloorControl; f.MinDelay < 0 || f.MaxDelay < 0 {
		return fmt.Errorf("agent: config: floorControl: negative delay")
	}
	if t := c.ChatResponse.ConfidenceThreshold; t < 0 || t > 1 {
		return fmt.Errorf("agent: config: chatResponse.confidenceThreshold %v: want a number from 0 to 1", t)
	}
	if c.ProposalTimeout < 0 || c.ProposalTimeout > maxProposalTimeout {
		return fmt.Errorf("agent: config: proposal timeout %v: want up to %v", c.ProposalTimeout, maxProposalTimeout)
	}
	return nil
}

// maxProposalTimeout bounds how long a proposal may wait for a person: a
// week, past which a waiting run is more likely forgotten than reviewed.
const maxProposalTimeout = 7 * 24 * time.Hour

// Provider returns the model provider c selects: the offline one with
// MockLLM, else as llm.FromEnv chooses with c's APIKey, BaseURL and Model
// over the OPENAI_* variables that getenv (nil means os.Getenv) reads.
func (c Config) Provider(getenv func(string) string) (llm.Provider, error) {
	if c.MockLLM {
		return llm.NewOffline(), nil
	}
	p, err := llm.FromEnv(getenv, llm.Config{APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model})
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return p, nil
}

// jsonConfig is Config as the reference spells it. The members it only
// accepts (logLevel, ...) are read and ignored; requestTimeout sets
// ProposalTimeout.
type jsonConfig struct {
	Name                      *string          `json:"name"`
	SystemPrompt              *string          `json:"systemPrompt"`
	Model                     *string          `json:"model"`
	APIKey                    *string          `json:"apiKey"`
	BaseURL                   *string          `json:"baseURL"`
	MockLLM                   *bool            `json:"mockLLM"`
	ReasoningEnabled          *bool            `json:"reasoningEnabled"`
	ThinkingEnabled           *bool            `json:"thinkingEnabled"` // the spec's older name
	ReasoningFormat           *string          `json:"reasoningFormat"`
	AutoRespond               *bool            `json:"autoRespond"`
	MaxIterations             *int             `json:"maxIterations"`
	ConversationHistoryLength *int             `json:"conversationHistoryLength"`
	ContextTokenLimit         *int             `json:"contextTokenLimit"`
	DiscoveryWaitMS           *int             `json:"discoveryWaitMs"`
	MessageQueue              *jsonQueue       `json:"messageQueue"`
	Prompts                   *jsonPrompts     `json:"prompts"`
	ChatResponse              *jsonChatRespond `json:"chatResponse"`
	FloorControl              *jsonFloor       `json:"floorControl"`

	LogLevel       json.RawMessage `json:"logLevel"`
	RequestTimeout *int64          `json:"requestTimeout"` // milliseconds
}

type jsonQueue struct {
	MaxQueueSize *int `json:"maxQueueSize"`
	// Accepted for the reference's sake; this agent always queues and
	// drops the oldest.
	EnableQueueing                  json.RawMessage `json:"enableQueueing"`
	DropStrategy                    json.RawMessage `json:"dropStrategy"`
	NotifyQueueing                  json.RawMessage `json:"notifyQueueing"`
	IncludeQueuedSenderNotification json.RawMessage `json:"includeQueuedSenderNotification"`
	QueueInjectionPrompt            json.RawMessage `json:"queueInjectionPrompt"`
}

type jsonPrompts struct {
	System   *string `json:"system"`
	Reason   *string `json:"reason"`
	Act      *string `json:"act"`
	Respond  *string `json:"respond"`
	Classify *string `json:"classify"`
}

type jsonChatRespond struct {
	RespondToQuestions  *bool    `json:"respondToQuestions"`
	RespondToMentions   *bool    `json:"respondToMentions"`
	RespondToDirect     *bool    `json:"respondToDirect"`
	ConfidenceThreshold *float64 `json:"confidenceThreshold"`
	ContextWindow       *int     `json:"contextWindow"`
	AnswersPerMinute    *int     `json:"answersPerMinute"`
}

type jsonFloor struct {
	Enabled    *bool    `json:"enabled"`
	MinDelayMS *int     `json:"minDelayMs"`
	MaxDelayMS *int     `json:"maxDelayMs"`
	Operators  []string `json:"operators"`
}

// set sets *dst when src is given.
func set[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

// apply sets the members of c that j names.
func (j *jsonConfig) apply(c *Config) {
	set(&c.Name, j.Name)
	set(&c.SystemPrompt, j.SystemPrompt)
	set(&c.Model, j.Model)
	set(&c.APIKey, j.APIKey)
	set(&c.BaseURL, j.BaseURL)
	set(&c.ReasoningFormat, j.ReasoningFormat)
	set(&c.MockLLM, j.MockLLM)
	set(&c.ReasoningEnabled, j.ThinkingEnabled)
	set(&c.ReasoningEnabled, j.ReasoningEnabled) // the newer name wins
	set(&c.AutoRespond, j.AutoRespond)
	set(&c.MaxIterations, j.MaxIterations)
	set(&c.ContextTokenLimit, j.ContextTokenLimit)
	if n := j.ConversationHistoryLength; n != nil {
		c.HistoryLength = *n
		if *n == 0 { // the reference's 0 is no history
			c.HistoryLength = -1
		}
	}
	if ms := j.DiscoveryWaitMS; ms != nil {
		c.DiscoveryWait = time.Duration(*ms) * time.Millisecond
		if *ms == 0 {
			c.DiscoveryWait = -1
		}
	}
	if ms := j.RequestTimeout; ms != nil && *ms > 0 {
		c.ProposalTimeout = time.Duration(min(*ms, int64(maxProposalTimeout/time.Millisecond))) * time.Millisecond
	}
	if q := j.MessageQueue; q != nil {
		set(&c.QueueSize, q.MaxQueueSize)
	}
	if p := j.Prompts; p != nil {
		set(&c.Prompts.System, p.System)
		set(&c.Prompts.Reason, p.Reason)
		set(&c.Prompts.Act, p.Act)
		set(&c.Prompts.Respond, p.Respond)
		set(&c.Prompts.Classify, p.Classify)
	}
	if r := j.ChatResponse; r != nil {
		cr := &c.ChatResponse
		for _, b := range []struct {
			dst **bool
			src *bool
		}{{&cr.RespondToQuestions, r.RespondToQuestions}, {&cr.RespondToMentions, r.RespondToMentions}, {&cr.RespondToDirect, r.RespondToDirect}} {
			if b.src != nil {
				v := *b.src
				*b.dst = &v
			}
		}
		set(&cr.ConfidenceThreshold, r.ConfidenceThreshold)
		set(&cr.ContextWindow, r.ContextWindow)
		set(&cr.AnswersPerMinute, r.AnswersPerMinute)
	}
	if f := j.FloorControl; f != nil {
		fc := &c.FloorControl
		if f.Enabled != nil {
			fc.Disabled = !*f.Enabled
		}
		for _, d := range []struct {
			dst *time.Duration
			ms  *int
		}{{&fc.MinDelay, f.MinDelayMS}, {&fc.MaxDelay, f.MaxDelayMS}} {
			if d.ms != nil {
				*d.dst = time.Duration(*d.ms) * time.Millisecond
			}
		}
		if f.Operators != nil {
			fc.Operators = f.Operators
		}
	}
}

// MergeJSON sets the fields of c that a JSON object such as the reference
// agent's MEW_AGENT_CONFIG names, leaving the others as they are. The keys:
// name, systemPrompt, model, apiKey, baseURL, mockLLM, reasoningEnabled
// (or thinkingEnabled), reasoningFormat, autoRespond, maxIterations,
// conversationHistoryLength (0 there means no history, as in the reference,
// and sets HistoryLength to -1), contextTokenLimit, discoveryWaitMs,
// messageQueue.maxQueueSize, prompts.{system,reason,act,respond,classify}
// and chatResponse.{respondToDirect,respondToMentions,respondToQuestions,
// confidenceThreshold,contextWindow,answersPerMinute} and
// floorControl.{enabled,minDelayMs,maxDelayMs,operators}. Keys it does not know
// are ignored, since the reference's scripts pass some of their own; a
// known key with a value of the wrong type is an error that names it.
func (c *Config) MergeJSON(data []byte) error {
	return c.merge(data, false)
}

// merge decodes data into c, refusing unknown keys when strict.
func (c *Config) merge(data []byte, strict bool) error {
	var j jsonConfig
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("agent: config: %w", explain(err))
	}
	if dec.More() {
		return errors.New("agent: config: more than one JSON value")
	}
	next := *c
	j.apply(&next)
	if err := next.Validate(); err != nil {
		return err
	}
	*c = next
	return nil
}

// explain rewrites a JSON decoding error to name the key at fault.
func explain(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: %s is not a %s", te.Field, te.Value, te.Type)
	}
	return err
}

// File is an agent configuration file: where to connect and what to do.
type File struct {
	// Gateway, Space, Token and ParticipantID are the connection, each
	// optional (flags and MEW_* variables fill what is missing).
	Gateway, Space, Token, ParticipantID string
	// Config is the agent's behaviour.
	Config Config
}

// maxFileSize bounds a configuration file.
const maxFileSize = 256 << 10

// fileLimits bound what a configuration file may expand to, aliases
// followed.
var fileLimits = yamlx.Limits{Depth: 64, Nodes: 100_000, Bytes: 4 * maxFileSize, Indicators: 1 << 16}

// LoadFile reads an agent configuration file, YAML or JSON: the keys of
// MergeJSON plus gateway, space, token and participant_id. Unlike
// MEW_AGENT_CONFIG, a file with a key the agent does not know is refused,
// naming the key, so that a misspelt setting is not silently ignored.
func LoadFile(path string) (File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("agent: config: %w", err)
	}
	f, err := ParseFile(data)
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ParseFile is LoadFile on the file's content.
func ParseFile(data []byte) (File, error) {
	if len(data) > maxFileSize {
		return File{}, fmt.Errorf("agent: config: larger than %d bytes", maxFileSize)
	}
	doc, err := yamlx.Decode(data, fileLimits, true)
	if err != nil {
		return File{}, fmt.Errorf("agent: config: %w", err)
	}
	var root *yaml.Node
	if doc != nil && len(doc.Content) > 0 {
		root = doc.Content[0]
	}
	pairs, err := yamlx.Mapping(root, "")
	if err != nil {
		return File{}, fmt.Errorf("agent: config: %w", err)
	}
	var f File
	connection := map[string]*string{"gateway": &f.Gateway, "space": &f.Space, "token": &f.Token, "participant_id": &f.ParticipantID}
	rest := pairs[:0:0]
	for _, kv := range pairs {
		dst, ok := connection[kv.Key]
		if !ok {
			rest = append(rest, kv)
			continue
		}
		if v := yamlx.Deref(kv.Value); v == nil || v.Kind != yaml.ScalarNode || v.ShortTag() != yamlx.TagStr {
			return File{}, fmt.Errorf("agent: config: %s: want a string, got %s", kv.Key, yamlx.DescribeKind(v))
		}
		*dst = strings.TrimSpace(yamlx.Deref(kv.Value).Value)
	}
	settings, err := yamlx.AppendObject(nil, rest, "")
	if err != nil {
		return File{}, fmt.Errorf("agent: config: %w", err)
	}
	if err := f.Config.merge(settings, true); err != nil {
		return File{}, err
	}
	return f, nil
}
