package clusterhist

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// MaxCursorLen bounds a cursor: three numbers and a hash fit in 50 bytes.
const MaxCursorLen = 64

// Cursor is where a poller is in the cluster's history: the last History
// seq it got (Log), and, on the node whose mark (Writer.Hash) it carries,
// the next private entry of that node's own history (Priv).
type Cursor struct {
	Log  uint64
	Priv uint64
	Hash string
}

// String is the cursor as a poll returns it: "L.P.H".
func (c Cursor) String() string {
	return strconv.FormatUint(c.Log, 10) + "." + strconv.FormatUint(c.Priv, 10) + "." + c.Hash
}

// ParseCursor reads "L.P.H" (as String writes it) or a plain "L" (the
// single-node form, a History seq here, after which private answers are
// those made from now on); "" and "0" are the start of both. private
// reports whether the cursor says where the private answers are.
func ParseCursor(s string) (c Cursor, private bool, err error) {
	if s == "" || s == "0" {
		return Cursor{}, true, nil
	}
	if len(s) > MaxCursorLen {
		return c, false, errors.New("cursor is too long")
	}
	parts := strings.Split(s, ".")
	switch len(parts) {
	case 1:
		c.Log, err = strconv.ParseUint(s, 10, 64)
		return c, false, err
	case 3:
		if c.Log, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
			return c, false, err
		}
		if c.Priv, err = strconv.ParseUint(parts[1], 10, 64); err != nil {
			return c, false, err
		}
		h := parts[2]
		if len(h) != 8 || strings.Trim(h, "0123456789abcdef") != "" {
			return c, false, errors.New("bad node mark")
		}
		c.Hash = h
		return c, true, nil
	}
	return c, false, errors.New("not a cursor")
}

// Entry is a public envelope of the history.
type Entry struct {
	Seq  uint64
	At   time.Time // the accepting node's time of the envelope
	Data []byte    // the envelope
}

// Decode reads a record of the history. A record another node wrote
// wrongly (too short for its stamp, or not JSON) is left out: a poll's
// answer must stay JSON.
func Decode(rec cluster.Record) (Entry, bool) {
	if len(rec.Data) <= Stamp || !json.Valid(rec.Data[Stamp:]) {
		return Entry{}, false
	}
	at := time.Unix(0, int64(binary.BigEndian.Uint64(rec.Data)))
	return Entry{Seq: rec.Seq, At: at, Data: rec.Data[Stamp:]}, true
}

// Read returns up to limit entries of space's history after seq from and
// recorded after the time after (when set), and the seq of the last record
// it looked at (from if none): past the last entry returned only when
// there are no more.
func Read(ctx context.Context, log cluster.Log, space string, from uint64, after time.Time, limit int) ([]Entry, uint64, error) {
	var out []Entry
	last := from
	// Without a time filter every record is returned: read no more than
	// the page (records may be up to 1 MiB each). With one, scan in the
	// largest batches.
	batch := limit
	if !after.IsZero() {
		batch = cluster.MaxReadLen
	}
	for len(out) < limit {
		recs, err := log.Read(ctx, space, last, batch)
		if err != nil {
			return nil, 0, err
		}
		for _, rec := range recs {
			if e, ok := Decode(rec); ok && (after.IsZero() || e.At.After(after)) {
				out = append(out, e)
			}
			last = rec.Seq
			if len(out) == limit {
				return out, last, nil
			}
		}
		if len(recs) < batch {
			break
		}
	}
	return out, last, nil
}
