package space

import (
	"strconv"
	"strings"

	"github.com/mew-protocol/mew/internal/yamlx"
)

// ConfigError reports a problem with a configuration file: a YAML syntax
// error, a key of the wrong type, an invalid capability, a file too large.
type ConfigError struct {
	File string // the file as named by the caller ("space.yaml" when parsed without a path)
	Line int    // 1-based line of the offending node, 0 when unknown
	Key  string // the key path, e.g. "participants.helper.capabilities[1]"; "" for the whole file
	Err  error  // what is wrong
}

// Error returns "<file>:<line>: <key>: <what>", leaving out the line or the
// key when they are unknown.
func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("invalid configuration")
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// Key paths ("participants.helper.args[1]") are written as yamlx writes
// them.
var (
	// joinKey appends a mapping key to a key path.
	joinKey = yamlx.JoinKey
	// indexKey appends a list index to a key path.
	indexKey = yamlx.IndexKey
)
