package feedtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/mew-protocol/mew/protocol"
)

// File is a vector file: cases, each read by a new reader.
type File struct {
	Comment []string `json:"comment"`
	Cases   []Case   `json:"cases"`
}

// Case is envelopes fed in order to a new reader, and the events envelope
// i must make, Events[i], as JSON values.
type Case struct {
	Name      string              `json:"name"`
	Envelopes []json.RawMessage   `json:"envelopes"`
	Events    [][]json.RawMessage `json:"events"`
}

// Path is the shared vector file, found from this source file so that any
// package's test reads the same one.
func Path(t testing.TB) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("feedtest: cannot tell where the vectors are")
	}
	return filepath.Join(filepath.Dir(self), "..", "testdata", "vectors.json")
}

// Load reads the shared vectors, failing t when they cannot be read.
func Load(t testing.TB) *File {
	t.Helper()
	b, err := os.ReadFile(Path(t))
	if err != nil {
		t.Fatal(err)
	}
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", Path(t), err)
	}
	return &f
}

// Envelope decodes the case's envelope i.
func (c *Case) Envelope(t testing.TB, i int) *protocol.Envelope {
	t.Helper()
	env := new(protocol.Envelope)
	if err := json.Unmarshal(c.Envelopes[i], env); err != nil {
		t.Fatalf("%s: envelope %d: %v", c.Name, i, err)
	}
	return env
}

// FirstType is the type of the first event envelope i must make, "" when
// it makes none: "spoofed" and "malformed" are always alone.
func (c *Case) FirstType(i int) string {
	var e struct {
		Type string `json:"type"`
	}
	if len(c.Events[i]) > 0 {
		_ = json.Unmarshal(c.Events[i][0], &e)
	}
	return e.Type
}
