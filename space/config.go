package space

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// MaxConfigSize is the largest configuration file that Load and Parse accept.
const MaxConfigSize = 4 << 20

// DefaultFloorTTL is how long a floor claim lasts when floor_control.ttl_ms is
// not given.
const DefaultFloorTTL = 45 * time.Second

// Config is a parsed space.yaml.
type Config struct {
	// Path is the file the configuration was read from: absolute when it
	// came from Load, "" when it was parsed from bytes without a path.
	Path string
	// Dir is the directory holding the file (absolute when Path is; ""
	// without a path, in which case relative paths stay relative to the
	// working directory).
	Dir string
	// MewDir is where the space keeps its state: <Dir>/.mew when that
	// directory exists, else Dir. Tokens live in MewDir/tokens, audit logs
	// in MewDir/logs.
	MewDir string

	Space        Info
	Participants []*Participant // in file order
	Defaults     Defaults
	Logging      Logging
	FloorControl FloorControl
	// Approvals are the space's approval rules, in file order: the first
	// that matches a proposal decides who must approve it (approvals.md).
	Approvals []*ApprovalRule
	// Notify says how the gateway reaches the approvers a proposal awaits
	// (notify.webhook in approvals.md).
	Notify Notify

	// Unknown lists, sorted, the key paths present in the file that this
	// package does not know, e.g. "participants.helper.colour". They are
	// not errors; a command may warn about them.
	Unknown []string
	// DidYouMean maps the key paths of Unknown that look like a typo of a
	// known key ("participants.mew.capabilites") to that key
	// ("capabilities").
	DidYouMean map[string]string
}

// Warnings returns one line for each unknown key, with the known key it
// is likely a typo of: what `mew space up` and `mew gateway start` print,
// since a misspelt key is otherwise ignored without a word.
func (c *Config) Warnings() []string {
	out := make([]string, 0, len(c.Unknown))
	for _, k := range c.Unknown {
		w := c.Path + ": unknown key " + k + " ignored"
		if s := c.DidYouMean[k]; s != "" {
			w += " (did you mean " + s + "?)"
		}
		out = append(out, w)
	}
	return out
}

// Info is the space section.
type Info struct {
	ID                 string `yaml:"id"`                  // the space's name on the wire (required)
	Name               string `yaml:"name"`                // for display
	Description        string `yaml:"description"`         // for display
	DefaultParticipant string `yaml:"default_participant"` // who "mew space connect" joins as
	UITheme            string `yaml:"ui_theme"`            // terminal UI theme
}

// Participant is one entry of the participants section.
type Participant struct {
	// ID is the map key: the participant's logical id.
	ID string
	// Tokens are the literal tokens listed under tokens:, each identifying
	// this participant.
	Tokens []string `yaml:"tokens"`
	// Capabilities are the participant's capability patterns, each as
	// compact JSON with its keys in the order written. Nil when the
	// participant has no capabilities: key (then [Config.Capabilities]
	// gives the defaults); empty but not nil for capabilities: [].
	Capabilities []json.RawMessage `yaml:"capabilities"`

	Type    string   `yaml:"type"`    // mcp-bridge, a2a-bridge, local, mew, ... (informational except the bridges)
	Command string   `yaml:"command"` // program to launch
	Args    []string `yaml:"args"`    // its arguments, with ${PORT}, ${SPACE}, ${TOKEN} not yet substituted
	Env     []EnvVar `yaml:"env"`     // in file order, ${VAR} not yet expanded

	AutoStart   bool `yaml:"auto_start"`   // launch with the space
	AutoConnect bool `yaml:"auto_connect"` // connect as a virtual participant at gateway start
	Fifo        bool `yaml:"fifo"`         // create FIFOs for the participant

	// OutputLog is output_log as written; resolve it with [Config.Resolve].
	OutputLog string `yaml:"output_log"`
	// DefaultTo is default_to: for each kind, the default recipients.
	DefaultTo map[string][]string `yaml:"default_to"`

	RestartPolicy string `yaml:"restart_policy"` // e.g. on-failure
	IO            string `yaml:"io"`             // e.g. http

	MCPServer    *MCPServer     `yaml:"mcp_server"`    // the MCP server a bridge participant runs
	BridgeConfig map[string]any `yaml:"bridge_config"` // kept as JSON-like values

	// A2AURL is a2a_url: the remote A2A agent that a participant of type
	// a2a-bridge joins to the space. A2AAnswerers is a2a_answerers: who
	// besides the asker may answer the agent's questions.
	A2AURL       string   `yaml:"a2a_url"`
	A2AAnswerers []string `yaml:"a2a_answerers"`
}

// EnvVar is one environment variable.
type EnvVar struct {
	Name, Value string
}

// MCPServer is the mcp_server section of a bridge participant.
type MCPServer struct {
	Command string   `yaml:"command"`
	Args    []string `yaml:"args"`
	Env     []EnvVar `yaml:"env"`
	Cwd     string   `yaml:"cwd"` // as written; resolve it with [Config.Resolve]
	// URL is url: a streamable HTTP endpoint, instead of a command.
	URL string `yaml:"url"`
	// Auth is auth: the credentials sent to URL (mcpauth.go).
	Auth *MCPAuth `yaml:"auth"`
}

// Defaults is the defaults section.
type Defaults struct {
	// Capabilities are given to participants without their own and to
	// tokens that name no participant.
	Capabilities []json.RawMessage `yaml:"capabilities"`
	// DefaultTo is defaults.routing.default_to.
	DefaultTo map[string][]string
	// ProposalTimeout is defaults.proposal_timeout_ms: how long a proposal
	// of the space's agents waits for a person to decide it (0: each
	// agent's own, 10 minutes by default). `mew space up` hands it to the
	// participants it starts as MEW_PROPOSAL_TIMEOUT.
	ProposalTimeout time.Duration `yaml:"proposal_timeout_ms"`
}

// MaxProposalTimeout bounds defaults.proposal_timeout_ms: a week.
const MaxProposalTimeout = 7 * 24 * time.Hour

// Logging is the gateway_logging section: which audit logs the gateway
// writes. Every switch defaults to true.
type Logging struct {
	Enabled             bool `yaml:"enabled"`              // master switch
	EnvelopeHistory     bool `yaml:"envelope_history"`     // envelope_history.enabled, or a boolean
	CapabilityDecisions bool `yaml:"capability_decisions"` // capability_decisions.enabled, or a boolean
}

// FloorControl is the floor_control section.
// ApprovalRule is one rule of a space's approval policy: who must approve
// the proposals it matches, how many of them, within what time, and what
// happens then. The gateway enforces it (docs/approvals.md).
type ApprovalRule struct {
	// Name names the rule in every state the gateway announces; unique.
	Name string `yaml:"name"`
	// Reason is what approvers are told the rule is for.
	Reason string `yaml:"reason"`
	// Proposal and Request are the rule's match (a capability pattern
	// without kind) as the patterns of an mcp/proposal and of an
	// mcp/request: the first decides which proposals need approval, the
	// second what always_ask refuses without one.
	Proposal, Request json.RawMessage
	// ApprovalStep is the first set of approvers.
	ApprovalStep
	// Then is what happens when Within passes: ThenTimeout (the default)
	// settles the proposal as timed out; ThenEscalate hands it to Escalate.
	Then     string        `yaml:"then"`
	Escalate *ApprovalStep `yaml:"escalate"`
	// AlwaysAsk: no grant lets anyone send what the rule matches as a
	// request of its own; it must be proposed and approved.
	AlwaysAsk bool `yaml:"always_ask"`
}

// ApprovalStep is who approves and how fast.
type ApprovalStep struct {
	// Approvers are participant ids; the proposer never counts.
	Approvers []string `yaml:"approvers"`
	// Required is how many distinct approvers must approve (default 1).
	Required int `yaml:"required"`
	// Within bounds the wait (within_ms; 0: no bound).
	Within time.Duration `yaml:"within_ms"`
}

// What an approval rule does when its time passes.
const (
	ThenTimeout  = "timeout"
	ThenEscalate = "escalate"
)

// MaxApprovalWait bounds approvals' within_ms: a week.
const MaxApprovalWait = 7 * 24 * time.Hour

type FloorControl struct {
	Enabled bool          `yaml:"enabled"` // default true
	TTL     time.Duration `yaml:"ttl_ms"`  // how long an unanswered claim lasts (default 45s)
}

// Load reads and parses the configuration file at path. Config.Path and
// Config.Dir are absolute. Errors are *ConfigError; when the file cannot be
// read, the error also wraps the cause (so errors.Is(err, fs.ErrNotExist)
// works).
func Load(path string) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, &ConfigError{File: path, Err: err}
	}
	data, err := readConfig(abs)
	if err != nil {
		return nil, &ConfigError{File: path, Err: err}
	}
	return parse(data, abs, path)
}

// readConfig reads a regular file of at most MaxConfigSize bytes.
func readConfig(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, pathErr(err)
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > MaxConfigSize {
		return nil, errTooLarge
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, pathErr(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxConfigSize+1))
	if err != nil {
		return nil, pathErr(err)
	}
	if len(data) > MaxConfigSize {
		return nil, errTooLarge
	}
	return data, nil
}

var errTooLarge = fmt.Errorf("file is larger than %d bytes", MaxConfigSize)

// pathErr drops the *fs.PathError wrapper, whose path the ConfigError
// already names.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Parse parses a configuration. path names the file in error messages and
// sets Config.Path, Dir and MewDir (MewDir is found by looking for a .mew
// directory beside the file); with path "" nothing is read from the file
// system and Dir and MewDir are "". Errors are *ConfigError.
func Parse(data []byte, path string) (*Config, error) {
	return parse(data, path, path)
}

func parse(data []byte, path, display string) (*Config, error) {
	if display == "" {
		display = "space.yaml"
	}
	c := &Config{Path: path}
	if path != "" {
		c.Dir = filepath.Dir(path)
		c.MewDir = c.Dir
		if fi, err := os.Stat(filepath.Join(c.Dir, ".mew")); err == nil && fi.IsDir() {
			c.MewDir = filepath.Join(c.Dir, ".mew")
		}
	}
	p := &parser{file: display}
	if err := p.parse(data, c); err != nil {
		return nil, p.wrap(err)
	}
	return c, nil
}

// Participant returns the participant with the given id, or nil.
func (c *Config) Participant(id string) *Participant {
	for _, p := range c.Participants {
		if p.ID == id {
			return p
		}
	}
	return nil
}

// Capabilities returns the capability patterns p is configured with: its
// own when it has a capabilities: key, else the defaults. p may be nil (a
// token that names no participant).
func (c *Config) Capabilities(p *Participant) []json.RawMessage {
	if p != nil && p.Capabilities != nil {
		return p.Capabilities
	}
	return c.Defaults.Capabilities
}

// SpaceDir returns the space's directory: the parent of Dir when the file is
// .mew/space.yaml (the `mew init` layout), else Dir. Participants run there,
// and relative paths in the file are relative to it.
func (c *Config) SpaceDir() string {
	if c.Dir != "" && filepath.Base(c.Dir) == ".mew" {
		return filepath.Dir(c.Dir)
	}
	return c.Dir
}

// Resolve returns p when it is absolute or empty, else p joined to
// SpaceDir: the way relative paths in the file (output_log, mcp_server.cwd)
// are meant, as the reference's processes, which run in the space
// directory, read them.
func (c *Config) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) || c.Dir == "" {
		return p
	}
	return filepath.Join(c.SpaceDir(), p)
}

// FindConfig returns the configuration file of the space in dir, looking
// where the reference CLI does: <dir>/.mew/space.yaml first, then
// <dir>/space.yaml. When neither exists the error wraps fs.ErrNotExist and
// names both.
func FindConfig(dir string) (string, error) {
	candidates := []string{
		filepath.Join(dir, ".mew", "space.yaml"),
		filepath.Join(dir, "space.yaml"),
	}
	for _, c := range candidates {
		fi, err := os.Stat(c)
		switch {
		case err == nil && !fi.IsDir():
			return c, nil
		case err == nil, errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		default:
			return "", fmt.Errorf("looking for the space configuration: %w", err)
		}
	}
	return "", fmt.Errorf("no space configuration: neither %s nor %s exists: %w", candidates[0], candidates[1], fs.ErrNotExist)
}
