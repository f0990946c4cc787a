package protocol

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestStreamInfoClone: a clone shares nothing with its original, so that a
// caller changing what it was given never changes what the SDK keeps.
func TestStreamInfoClone(t *testing.T) {
	orig := StreamInfo{
		StreamID: "stream-1", Owner: "a", AuthorizedWriters: []string{"a", "b"},
		Metadata: json.RawMessage(`{"k":1}`), Target: []string{"c"},
		Extra: map[string]json.RawMessage{"x": json.RawMessage(`[1]`)},
	}
	want := StreamInfo{
		StreamID: "stream-1", Owner: "a", AuthorizedWriters: []string{"a", "b"},
		Metadata: json.RawMessage(`{"k":1}`), Target: []string{"c"},
		Extra: map[string]json.RawMessage{"x": json.RawMessage(`[1]`)},
	}
	c := orig.Clone()
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("clone = %+v, want %+v", c, want)
	}
	c.AuthorizedWriters[0] = "z"
	c.Target[0] = "z"
	c.Metadata[2] = 'z'
	c.Extra["x"][1] = '9'
	c.Extra["y"] = nil
	if !reflect.DeepEqual(orig, want) {
		t.Fatalf("changing the clone changed the original: %+v", orig)
	}
	if z := (StreamInfo{}).Clone(); z.Extra != nil || z.Target != nil {
		t.Fatalf("clone of the zero value = %+v, want the zero value", z)
	}
}
