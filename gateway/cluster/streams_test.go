package cluster

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecodeStreamChange: whatever a log record holds, decoding never
// panics, answers ErrInvalid or a change, and a change decoded encodes to a
// record that decodes to the same change.
func FuzzDecodeStreamChange(f *testing.F) {
	f.Add([]byte(`{"stream_change":"open","origin":"n1:x","stream":{"id":"stream-1","seq":1,"owner":"a","owner_member":"a","writers":["a"],"created":"2026-01-01T00:00:00Z"},"cause":"r","announce":"e30="}`))
	f.Add([]byte(`{"stream_change":"left","origin":"n1","stream":{"id":"s","writers":["x"]},"who":"w"}`))
	f.Add([]byte(`{"stream_change":"close","origin":"n1","stream":{"id":"s"}} {}`))
	f.Add([]byte(`{"kind":"chat"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeStreamChange(b)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error not ErrInvalid: %v", err)
			}
			return
		}
		enc, err := EncodeStreamChange(c)
		if err != nil {
			return // a record near the size limit may grow when encoded again
		}
		if !IsStreamChange(enc) {
			t.Fatalf("encoded change does not start with the tag: %q", enc)
		}
		back, err := DecodeStreamChange(enc)
		if err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		again, _ := EncodeStreamChange(back)
		if !bytes.Equal(enc, again) {
			t.Fatalf("round trip changed the record:\n%s\n%s", enc, again)
		}
	})
}
