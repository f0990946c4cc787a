package protocol

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseFrame(t *testing.T) {
	tests := []struct {
		name     string
		msg      string
		isFrame  bool
		err      error
		streamID string
		data     string
	}{
		{"text", "#stream-1#hello", true, nil, "stream-1", "hello"},
		{"json data", `#stream-42#{"type":"token","text":"hi"}`, true, nil, "stream-42", `{"type":"token","text":"hi"}`},
		{"hash in data", "#s#a#b##", true, nil, "s", "a#b##"},
		{"binary data", "#s#\x00\xff#\x80\n", true, nil, "s", "\x00\xff#\x80\n"},
		{"empty data", "#s#", true, nil, "s", ""},
		{"empty stream id", "##x", true, ErrEmptyStreamID, "", ""},
		{"only hashes", "##", true, ErrEmptyStreamID, "", ""},
		{"single hash", "#nohash", false, ErrNotFrame, "", ""},
		{"just hash", "#", false, ErrNotFrame, "", ""},
		{"empty", "", false, ErrNotFrame, "", ""},
		{"envelope", `{"kind":"chat","payload":{"text":"#a#b"}}`, false, ErrNotFrame, "", ""},
		{"leading space", " #s#x", false, ErrNotFrame, "", ""},
		{"id at limit", "#" + strings.Repeat("a", MaxStreamIDLen) + "#x", true, nil, strings.Repeat("a", MaxStreamIDLen), "x"},
		{"id too long", "#" + strings.Repeat("a", MaxStreamIDLen+1) + "#x", true, ErrStreamIDTooLong, "", ""},
		{"id with space", "#my stream#x", true, ErrBadStreamID, "", ""},
		{"id with control", "#s\n#x", true, ErrBadStreamID, "", ""},
		{"id with DEL", "#s\x7f#x", true, ErrBadStreamID, "", ""},
		{"id non-ASCII", "#strëam#x", true, ErrBadStreamID, "", ""},
		{"id punctuation", "#a-b_c.d:e/f~!#x", true, nil, "a-b_c.d:e/f~!", "x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msg := []byte(tc.msg)
			if got := IsFrame(msg); got != tc.isFrame {
				t.Errorf("IsFrame = %v, want %v", got, tc.isFrame)
			}
			id, data, err := ParseFrame(msg)
			if err != tc.err {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if err != nil {
				if id != nil || data != nil {
					t.Errorf("returned id %q data %q with error", id, data)
				}
				return
			}
			if string(id) != tc.streamID || string(data) != tc.data {
				t.Errorf("got (%q, %q), want (%q, %q)", id, data, tc.streamID, tc.data)
			}
			// Results alias the message.
			if len(data) > 0 && &data[len(data)-1] != &msg[len(msg)-1] {
				t.Error("data does not alias msg")
			}
			if err := ValidateStreamID(string(id)); err != nil {
				t.Errorf("ValidateStreamID(%q) = %v for a parsed id", id, err)
			}
			if got := AppendFrame(nil, string(id), data); !bytes.Equal(got, msg) {
				t.Errorf("AppendFrame = %q, want %q", got, msg)
			}
		})
	}
}

func TestValidateStreamID(t *testing.T) {
	for id, want := range map[string]error{
		"stream-1":                            nil,
		"":                                    ErrEmptyStreamID,
		"a#b":                                 ErrBadStreamID,
		"a b":                                 ErrBadStreamID,
		strings.Repeat("x", MaxStreamIDLen+1): ErrStreamIDTooLong,
		"\xff":                                ErrBadStreamID,
		strings.Repeat("x", MaxStreamIDLen):   nil,
		"stream-1795341860740-8yub9umtz?q=1&r=[2]": nil,
	} {
		if got := ValidateStreamID(id); got != want {
			t.Errorf("ValidateStreamID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestAppendFrame(t *testing.T) {
	got := AppendFrame([]byte("prefix:"), "s-1", []byte("a#b"))
	if string(got) != "prefix:#s-1#a#b" {
		t.Errorf("AppendFrame = %q", got)
	}
	if got := AppendFrame(nil, "s", nil); string(got) != "#s#" {
		t.Errorf("AppendFrame empty data = %q", got)
	}
}

func TestParseFrameAllocs(t *testing.T) {
	ok := []byte("#stream-1#some data")
	bad := []byte("#bad id#x")
	allocs := testing.AllocsPerRun(100, func() {
		_, _, _ = ParseFrame(ok)
		_, _, _ = ParseFrame(bad)
		_ = IsFrame(ok)
	})
	if allocs != 0 {
		t.Errorf("ParseFrame allocates %v times", allocs)
	}
}
