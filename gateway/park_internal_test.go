package gateway

import (
	"encoding/binary"
	"testing"
)

// wsFrame encodes a frame; masked as a client's when masked.
func wsFrame(fin bool, op byte, n int, masked bool) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	var m byte
	if masked {
		m = 0x80
	}
	out := []byte{b0}
	switch {
	case n < 126:
		out = append(out, m|byte(n))
	case n <= 0xffff:
		out = append(out, m|126, byte(n>>8), byte(n))
	default:
		out = append(out, m|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	if masked {
		out = append(out, 1, 2, 3, 4)
	}
	return append(out, make([]byte, n)...)
}

// TestFrameTracker: fed a stream a byte at a time, the tracker is at a
// boundary exactly where a frame ends outside a fragmented message.
func TestFrameTracker(t *testing.T) {
	type part struct {
		b   []byte
		end bool // a boundary after it
	}
	parts := []part{
		{wsFrame(true, 1, 0, true), true},
		{wsFrame(true, 1, 125, true), true},
		{wsFrame(true, 2, 126, true), true},
		{wsFrame(false, 1, 300, true), false},   // a message begins
		{wsFrame(true, 9, 5, true), false},      // a ping inside it
		{wsFrame(false, 0, 70000, true), false}, // 64-bit length
		{wsFrame(true, 0, 3, true), true},       // the message ends
		{wsFrame(true, 10, 0, true), true},      // a pong
		{wsFrame(true, 1, 10, false), true},     // unmasked (refused by the library, followed all the same)
	}
	var tr frameTracker
	if !tr.boundary() {
		t.Fatal("not at a boundary at the start")
	}
	for i, p := range parts {
		for j := range p.b {
			tr.feed(p.b[j : j+1])
			last := j == len(p.b)-1
			if want := last && p.end; tr.boundary() != want {
				t.Fatalf("part %d byte %d of %d: boundary %v, want %v", i, j, len(p.b), tr.boundary(), want)
			}
		}
	}
	// The same stream in one piece and in pieces of every size ends the same.
	var all []byte
	for _, p := range parts {
		all = append(all, p.b...)
	}
	for size := 1; size < 20; size++ {
		var tr2 frameTracker
		for b := all; len(b) > 0; {
			k := min(size, len(b))
			tr2.feed(b[:k])
			b = b[k:]
		}
		if tr2 != tr {
			t.Fatalf("pieces of %d: %+v, want %+v", size, tr2, tr)
		}
	}
}

// FuzzFrameTracker: whatever the bytes (hostile lengths, reserved opcodes),
// the tracker does not panic, and where the stream is cut does not change
// what it makes of it.
func FuzzFrameTracker(f *testing.F) {
	f.Add([]byte{0x81, 0x85, 1, 2, 3, 4, 'h', 'e', 'l', 'l', 'o'}, uint8(3))
	f.Add([]byte{0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, uint8(5)) // 2^64-1 bytes
	f.Add([]byte{0x0f, 0x7e, 0xff, 0xff, 0x8b, 0x00}, uint8(1))
	f.Add(wsFrame(false, 2, 200, true), uint8(100))
	f.Fuzz(func(t *testing.T, b []byte, cut uint8) {
		var one, two frameTracker
		one.feed(b)
		k := min(int(cut), len(b))
		two.feed(b[:k])
		two.feed(b[k:])
		if one != two {
			t.Fatalf("cut at %d: %+v, whole: %+v", k, two, one)
		}
		_ = one.boundary()
	})
}
