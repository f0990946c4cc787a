package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ProtocolVersion is the A2A version this package speaks, as the
// A2A-Version header and AgentInterface.ProtocolVersion carry it.
const ProtocolVersion = "1.0"

// Header names of the JSON-RPC binding's service parameters.
const (
	HeaderVersion    = "A2A-Version"
	HeaderExtensions = "A2A-Extensions"
)

// BindingJSONRPC is the protocolBinding of the JSON-RPC binding in an
// AgentInterface.
const BindingJSONRPC = "JSONRPC"

// CardPath is where an agent publishes its card, from its root.
const CardPath = "/.well-known/agent-card.json"

// TaskState is the state of a task (proto enum TaskState).
type TaskState string

// The task states of A2A 1.0.
const (
	TaskStateUnspecified   TaskState = "TASK_STATE_UNSPECIFIED"
	TaskStateSubmitted     TaskState = "TASK_STATE_SUBMITTED"
	TaskStateWorking       TaskState = "TASK_STATE_WORKING"
	TaskStateCompleted     TaskState = "TASK_STATE_COMPLETED"
	TaskStateFailed        TaskState = "TASK_STATE_FAILED"
	TaskStateCanceled      TaskState = "TASK_STATE_CANCELED"
	TaskStateInputRequired TaskState = "TASK_STATE_INPUT_REQUIRED"
	TaskStateRejected      TaskState = "TASK_STATE_REJECTED"
	TaskStateAuthRequired  TaskState = "TASK_STATE_AUTH_REQUIRED"
)

// Terminal reports whether no message may continue a task in state s:
// completed, failed, canceled or rejected.
func (s TaskState) Terminal() bool {
	switch s {
	case TaskStateCompleted, TaskStateFailed, TaskStateCanceled, TaskStateRejected:
		return true
	}
	return false
}

// Interrupted reports whether a task in state s waits for its client:
// input-required or auth-required.
func (s TaskState) Interrupted() bool {
	return s == TaskStateInputRequired || s == TaskStateAuthRequired
}

// Known reports whether s is one of the states of A2A 1.0 other than
// unspecified.
func (s TaskState) Known() bool {
	switch s {
	case TaskStateSubmitted, TaskStateWorking, TaskStateCompleted, TaskStateFailed, TaskStateCanceled,
		TaskStateInputRequired, TaskStateRejected, TaskStateAuthRequired:
		return true
	}
	return false
}

// Role says who sent a message (proto enum Role).
type Role string

// The roles of A2A 1.0.
const (
	RoleUser  Role = "ROLE_USER"
	RoleAgent Role = "ROLE_AGENT"
)

// Part is one piece of a message or an artifact: exactly one of Text, Raw,
// URL and Data (a proto oneof), with optional metadata, filename and media
// type.
type Part struct {
	// Text is a text part. HasText tells an empty text from none.
	Text string
	// Raw is file content (base64 in JSON).
	Raw []byte
	// URL points to file content.
	URL string
	// Data is any JSON value.
	Data json.RawMessage
	// Metadata is a JSON object, or nil.
	Metadata json.RawMessage
	// Filename and MediaType describe the content.
	Filename  string
	MediaType string

	kind string // which member of the oneof is set: "text", "raw", "url" or "data"
}

// TextPart returns a text part.
func TextPart(text string) Part { return Part{Text: text, kind: "text"} }

// DataPart returns a data part holding v as JSON.
func DataPart(v any) (Part, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Part{}, fmt.Errorf("a2a: data part: %w", err)
	}
	return Part{Data: b, MediaType: "application/json", kind: "data"}, nil
}

// Kind names the member of the oneof that is set: "text", "raw", "url",
// "data", or "" for none.
func (p Part) Kind() string {
	if p.kind != "" {
		return p.kind
	}
	switch {
	case p.Text != "":
		return "text"
	case p.Raw != nil:
		return "raw"
	case p.URL != "":
		return "url"
	case p.Data != nil:
		return "data"
	}
	return ""
}

type partJSON struct {
	Text      *string         `json:"text,omitempty"`
	Raw       []byte          `json:"raw,omitempty"`
	URL       *string         `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// partOut is a part as written: raw as a pointer, so that empty content
// is still present.
type partOut struct {
	Text      *string         `json:"text,omitempty"`
	Raw       *[]byte         `json:"raw,omitempty"`
	URL       *string         `json:"url,omitempty"`
	Data      json.RawMessage `json:"data,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	Filename  string          `json:"filename,omitempty"`
	MediaType string          `json:"mediaType,omitempty"`
}

// MarshalJSON writes the part's one content member.
func (p Part) MarshalJSON() ([]byte, error) {
	j := partOut{Metadata: p.Metadata, Filename: p.Filename, MediaType: p.MediaType}
	switch p.Kind() {
	case "text":
		j.Text = &p.Text
	case "raw":
		raw := p.Raw
		if raw == nil {
			raw = []byte{}
		}
		j.Raw = &raw
	case "url":
		j.URL = &p.URL
	case "data":
		j.Data = p.Data
	default:
		return nil, errors.New("a2a: a part needs text, raw, url or data")
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a part; it must have exactly one of text, raw, url
// and data.
func (p *Part) UnmarshalJSON(b []byte) error {
	var j partJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(b, &members); err != nil {
		return err
	}
	*p = Part{Metadata: j.Metadata, Filename: j.Filename, MediaType: j.MediaType}
	n := 0
	for _, k := range []string{"text", "raw", "url", "data"} {
		if v, ok := members[k]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			n++
			p.kind = k
		}
	}
	if n != 1 {
		return fmt.Errorf("a part has %d of text, raw, url and data; it needs exactly one", n)
	}
	switch p.kind {
	case "text":
		p.Text = *j.Text
	case "raw":
		p.Raw = j.Raw
		if p.Raw == nil {
			p.Raw = []byte{}
		}
	case "url":
		p.URL = *j.URL
	case "data":
		p.Data = j.Data
	}
	if len(p.Metadata) > 0 && !isObject(p.Metadata) {
		return errors.New("a part's metadata must be an object")
	}
	return nil
}

// isObject reports whether raw is a JSON object (or null).
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || raw[0] == '{' || bytes.Equal(raw, []byte("null"))
}

// Message is one turn of communication between a client and an agent.
type Message struct {
	MessageID        string          `json:"messageId"`
	ContextID        string          `json:"contextId,omitempty"`
	TaskID           string          `json:"taskId,omitempty"`
	Role             Role            `json:"role"`
	Parts            []Part          `json:"parts"`
	Metadata         json.RawMessage `json:"metadata,omitempty"`
	Extensions       []string        `json:"extensions,omitempty"`
	ReferenceTaskIDs []string        `json:"referenceTaskIds,omitempty"`
}

// Text returns the message's text parts joined by newlines.
func (m *Message) Text() string {
	if m == nil {
		return ""
	}
	return partsText(m.Parts)
}

// partsText joins the text parts of parts with newlines.
func partsText(parts []Part) string {
	var b bytes.Buffer
	for _, p := range parts {
		if p.Kind() != "text" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// TaskStatus is a task's state, with the agent's message about it.
type TaskStatus struct {
	State     TaskState `json:"state"`
	Message   *Message  `json:"message,omitempty"`
	Timestamp string    `json:"timestamp,omitempty"`
}

// Timestamp formats t as A2A timestamps are written: RFC 3339 in UTC with
// milliseconds.
func Timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// Artifact is an output of a task.
type Artifact struct {
	ArtifactID  string          `json:"artifactId"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parts       []Part          `json:"parts"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	Extensions  []string        `json:"extensions,omitempty"`
}

// Text returns the artifact's text parts joined by newlines.
func (a *Artifact) Text() string { return partsText(a.Parts) }

// Task is a stateful unit of work.
type Task struct {
	ID        string          `json:"id"`
	ContextID string          `json:"contextId,omitempty"`
	Status    TaskStatus      `json:"status"`
	Artifacts []Artifact      `json:"artifacts,omitempty"`
	History   []Message       `json:"history,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// TaskStatusUpdateEvent tells a stream that a task's status changed.
type TaskStatusUpdateEvent struct {
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Status    TaskStatus      `json:"status"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// TaskArtifactUpdateEvent tells a stream of a new artifact, or a chunk of
// one (Append).
type TaskArtifactUpdateEvent struct {
	TaskID    string          `json:"taskId"`
	ContextID string          `json:"contextId"`
	Artifact  Artifact        `json:"artifact"`
	Append    bool            `json:"append,omitempty"`
	LastChunk bool            `json:"lastChunk,omitempty"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
}

// StreamResponse is one event of a stream: exactly one member is set.
type StreamResponse struct {
	Task           *Task                    `json:"task,omitempty"`
	Message        *Message                 `json:"message,omitempty"`
	StatusUpdate   *TaskStatusUpdateEvent   `json:"statusUpdate,omitempty"`
	ArtifactUpdate *TaskArtifactUpdateEvent `json:"artifactUpdate,omitempty"`
}

// SendMessageResponse is the result of SendMessage: a task or a message.
type SendMessageResponse struct {
	Task    *Task    `json:"task,omitempty"`
	Message *Message `json:"message,omitempty"`
}

// SendMessageConfiguration tunes SendMessage.
type SendMessageConfiguration struct {
	AcceptedOutputModes []string `json:"acceptedOutputModes,omitempty"`
	// TaskPushNotificationConfig is accepted and refused: this server
	// does not push.
	TaskPushNotificationConfig json.RawMessage `json:"taskPushNotificationConfig,omitempty"`
	HistoryLength              *int32          `json:"historyLength,omitempty"`
	ReturnImmediately          bool            `json:"returnImmediately,omitempty"`
}

// SendMessageRequest is the params of SendMessage and
// SendStreamingMessage.
type SendMessageRequest struct {
	Tenant        string                    `json:"tenant,omitempty"`
	Message       *Message                  `json:"message"`
	Configuration *SendMessageConfiguration `json:"configuration,omitempty"`
	Metadata      json.RawMessage           `json:"metadata,omitempty"`
}

// GetTaskRequest is the params of GetTask.
type GetTaskRequest struct {
	Tenant        string `json:"tenant,omitempty"`
	ID            string `json:"id"`
	HistoryLength *int32 `json:"historyLength,omitempty"`
}

// ListTasksRequest is the params of ListTasks.
type ListTasksRequest struct {
	Tenant               string    `json:"tenant,omitempty"`
	ContextID            string    `json:"contextId,omitempty"`
	Status               TaskState `json:"status,omitempty"`
	PageSize             *int32    `json:"pageSize,omitempty"`
	PageToken            string    `json:"pageToken,omitempty"`
	HistoryLength        *int32    `json:"historyLength,omitempty"`
	StatusTimestampAfter string    `json:"statusTimestampAfter,omitempty"`
	IncludeArtifacts     *bool     `json:"includeArtifacts,omitempty"`
}

// ListTasksResponse is the result of ListTasks. NextPageToken is empty on
// the last page, and always present.
type ListTasksResponse struct {
	Tasks         []Task `json:"tasks"`
	NextPageToken string `json:"nextPageToken"`
	PageSize      int32  `json:"pageSize"`
	TotalSize     int32  `json:"totalSize"`
}

// CancelTaskRequest is the params of CancelTask.
type CancelTaskRequest struct {
	Tenant   string          `json:"tenant,omitempty"`
	ID       string          `json:"id"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// SubscribeToTaskRequest is the params of SubscribeToTask.
type SubscribeToTaskRequest struct {
	Tenant string `json:"tenant,omitempty"`
	ID     string `json:"id"`
}

// AgentCard describes an agent: who it is, where and how to call it, and
// its skills.
type AgentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	SupportedInterfaces  []AgentInterface          `json:"supportedInterfaces"`
	Provider             *AgentProvider            `json:"provider,omitempty"`
	Version              string                    `json:"version"`
	DocumentationURL     string                    `json:"documentationUrl,omitempty"`
	Capabilities         AgentCapabilities         `json:"capabilities"`
	SecuritySchemes      map[string]SecurityScheme `json:"securitySchemes,omitempty"`
	SecurityRequirements []SecurityRequirement     `json:"securityRequirements,omitempty"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []AgentSkill              `json:"skills"`
	Signatures           json.RawMessage           `json:"signatures,omitempty"`
	IconURL              string                    `json:"iconUrl,omitempty"`
}

// Interface returns the card's JSON-RPC interface for ProtocolVersion, or
// false.
func (c *AgentCard) Interface() (AgentInterface, bool) {
	for _, i := range c.SupportedInterfaces {
		if i.ProtocolBinding == BindingJSONRPC && i.ProtocolVersion == ProtocolVersion {
			return i, true
		}
	}
	return AgentInterface{}, false
}

// Skill returns the skill with id, or false.
func (c *AgentCard) Skill(id string) (AgentSkill, bool) {
	for _, s := range c.Skills {
		if s.ID == id {
			return s, true
		}
	}
	return AgentSkill{}, false
}

// AgentInterface is one URL and binding at which an agent is served.
type AgentInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	Tenant          string `json:"tenant,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
}

// AgentProvider is the organisation that runs an agent.
type AgentProvider struct {
	URL          string `json:"url"`
	Organization string `json:"organization"`
}

// AgentCapabilities are the optional features an agent supports.
type AgentCapabilities struct {
	Streaming         *bool           `json:"streaming,omitempty"`
	PushNotifications *bool           `json:"pushNotifications,omitempty"`
	Extensions        json.RawMessage `json:"extensions,omitempty"`
	ExtendedAgentCard *bool           `json:"extendedAgentCard,omitempty"`
}

// AgentSkill is one thing an agent can do.
type AgentSkill struct {
	ID                   string                `json:"id"`
	Name                 string                `json:"name"`
	Description          string                `json:"description"`
	Tags                 []string              `json:"tags"`
	Examples             []string              `json:"examples,omitempty"`
	InputModes           []string              `json:"inputModes,omitempty"`
	OutputModes          []string              `json:"outputModes,omitempty"`
	SecurityRequirements []SecurityRequirement `json:"securityRequirements,omitempty"`
}

// SecurityScheme is one way to authenticate (a proto oneof: one member
// set). The OAuth 2.0 and OpenID Connect schemes are kept as JSON.
type SecurityScheme struct {
	APIKey        *APIKeySecurityScheme   `json:"apiKeySecurityScheme,omitempty"`
	HTTPAuth      *HTTPAuthSecurityScheme `json:"httpAuthSecurityScheme,omitempty"`
	OAuth2        json.RawMessage         `json:"oauth2SecurityScheme,omitempty"`
	OpenIDConnect json.RawMessage         `json:"openIdConnectSecurityScheme,omitempty"`
	MutualTLS     json.RawMessage         `json:"mtlsSecurityScheme,omitempty"`
}

// UnmarshalJSON reads a scheme in the specification's form, and in the
// form @a2a-js/sdk 1.x publishes in its cards (ts-proto's encoding of the
// oneof: {"scheme": {"$case": "httpAuthSecurityScheme", "value": {...}}}),
// so that the official SDK's agents can be called.
func (s *SecurityScheme) UnmarshalJSON(b []byte) error {
	type plain SecurityScheme
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var alt struct {
		Scheme *struct {
			Case  string          `json:"$case"`
			Value json.RawMessage `json:"value"`
		} `json:"scheme"`
	}
	none := p.APIKey == nil && p.HTTPAuth == nil && p.OAuth2 == nil && p.OpenIDConnect == nil && p.MutualTLS == nil
	if none && json.Unmarshal(b, &alt) == nil && alt.Scheme != nil && alt.Scheme.Case != "" {
		wrapped, err := json.Marshal(map[string]json.RawMessage{alt.Scheme.Case: alt.Scheme.Value})
		if err != nil {
			return err
		}
		if err := json.Unmarshal(wrapped, &p); err != nil {
			return err
		}
	}
	*s = SecurityScheme(p)
	return nil
}

// APIKeySecurityScheme is an API key in a header, query parameter or
// cookie (Location).
type APIKeySecurityScheme struct {
	Description string `json:"description,omitempty"`
	Location    string `json:"location"`
	Name        string `json:"name"`
}

// HTTPAuthSecurityScheme is HTTP authentication, such as "Bearer".
type HTTPAuthSecurityScheme struct {
	Description  string `json:"description,omitempty"`
	Scheme       string `json:"scheme"`
	BearerFormat string `json:"bearerFormat,omitempty"`
}

// SecurityRequirement names schemes that together authorise a request
// (with their scopes); a list of requirements is an OR.
type SecurityRequirement struct {
	Schemes map[string]StringList `json:"schemes"`
}

// StringList is a list of strings (proto StringList).
type StringList struct {
	List []string `json:"list"`
}

// Bool returns a pointer to b, for the optional booleans of the card.
func Bool(b bool) *bool { return &b }
