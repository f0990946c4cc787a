package protocol

import "bytes"

// Stream data frames (spec §3.10.3) travel outside envelopes as raw WebSocket
// messages "#<stream_id>#<data>". The stream id runs from the first '#' to the
// second, so it cannot hold '#'; the data is everything after and may hold
// anything, '#' and binary included.

// AppendFrame appends the frame "#streamID#data" to dst. It does not check
// streamID; a sender that did not get it from stream/open should call
// ValidateStreamID first.
func AppendFrame(dst []byte, streamID string, data []byte) []byte {
	dst = append(dst, '#')
	dst = append(dst, streamID...)
	dst = append(dst, '#')
	return append(dst, data...)
}

// IsFrame reports whether msg is shaped like a frame: it starts with '#' and
// holds another '#'. This is the reference gateway's test, so a message it
// would treat as a frame is one here too, even when ParseFrame then refuses
// its stream id (as in "##x"). No JSON envelope starts with '#'.
func IsFrame(msg []byte) bool {
	return len(msg) > 1 && msg[0] == '#' && bytes.IndexByte(msg[1:], '#') >= 0
}

// ParseFrame splits a frame into its stream id and data. Both alias msg; it
// allocates nothing, even on error. Errors are the sentinels themselves:
// ErrNotFrame when IsFrame is false, else ErrEmptyStreamID,
// ErrStreamIDTooLong or ErrBadStreamID for a stream id that no stream could
// have. Empty data is a valid frame.
func ParseFrame(msg []byte) (streamID, data []byte, err error) {
	if len(msg) < 2 || msg[0] != '#' {
		return nil, nil, ErrNotFrame
	}
	end := bytes.IndexByte(msg[1:], '#')
	if end < 0 {
		return nil, nil, ErrNotFrame
	}
	id := msg[1 : 1+end]
	if err := checkStreamID(id); err != nil {
		return nil, nil, err
	}
	return id, msg[2+end:], nil
}

// ValidateStreamID checks that id can name a stream in a frame: 1 to
// MaxStreamIDLen bytes of visible ASCII (0x21-0x7E) other than '#'. Visible
// only, so that ids survive logs, shells and URLs unchanged.
func ValidateStreamID(id string) error {
	if len(id) == 0 {
		return ErrEmptyStreamID
	}
	if len(id) > MaxStreamIDLen {
		return ErrStreamIDTooLong
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= 0x20 || c >= 0x7f || c == '#' {
			return ErrBadStreamID
		}
	}
	return nil
}

func checkStreamID(id []byte) error {
	if len(id) == 0 {
		return ErrEmptyStreamID
	}
	if len(id) > MaxStreamIDLen {
		return ErrStreamIDTooLong
	}
	for _, c := range id {
		if c <= 0x20 || c >= 0x7f {
			return ErrBadStreamID
		}
	}
	return nil
}
