package space

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
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

// maxKeyInPath bounds how much of one key is shown in a key path.
const maxKeyInPath = 128

// keyPart formats one mapping key for a key path: as written when it is
// plain printable text, quoted (and shortened) otherwise, so that hostile
// keys cannot garble messages.
func keyPart(k string) string {
	plain := k != "" && len(k) <= maxKeyInPath && utf8.ValidString(k)
	if plain {
		for _, r := range k {
			if !unicode.IsPrint(r) || r == '"' {
				plain = false
				break
			}
		}
	}
	if plain {
		return k
	}
	if len(k) > maxKeyInPath {
		cut := maxKeyInPath
		for cut > 0 && !utf8.RuneStart(k[cut]) {
			cut--
		}
		return strconv.Quote(k[:cut]) + "..."
	}
	return strconv.Quote(k)
}

// joinKey appends a mapping key to a key path.
func joinKey(path, k string) string {
	if path == "" {
		return keyPart(k)
	}
	return path + "." + keyPart(k)
}

// indexKey appends a list index to a key path.
func indexKey(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
