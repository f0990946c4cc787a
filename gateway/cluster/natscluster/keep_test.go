package natscluster

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/mew-protocol/mew/gateway/cluster"
)

// TestKeptRecord: a history record gets its prefix back from the header;
// a header another node wrote wrongly (not hex, too long, making the record
// too large) leaves the record out rather than mangled.
func TestKeptRecord(t *testing.T) {
	big := make([]byte, cluster.MaxRecordLen)
	for _, c := range []struct {
		name, header string
		data         []byte
		want         string
		ok           bool
	}{
		{"no prefix", "", []byte("env"), "env", true},
		{"prefix", "00ff41", []byte("env"), "\x00\xffAenv", true},
		{"not hex", "zz", []byte("env"), "", false},
		{"odd hex", "abc", []byte("env"), "", false},
		{"too long", strings.Repeat("00", cluster.MaxKeepPrefix+1), []byte("env"), "", false},
		{"too large", "00", big, "", false},
	} {
		h := nats.Header{}
		if c.header != "" {
			h.Set(headerPrefix, c.header)
		}
		got, ok := keptRecord(h, c.data)
		if ok != c.ok || (ok && !bytes.Equal(got, []byte(c.want))) {
			t.Errorf("%s: %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestKeepsFailAll: the keeps still waiting when the node closes are told
// so, once each; a late acknowledgement finds nothing to call; no keep is
// registered after.
func TestKeepsFailAll(t *testing.T) {
	var k keeps
	var errs []error
	m1, m2 := &nats.Msg{}, &nats.Msg{}
	k.add(m1, func(err error) { errs = append(errs, err) })
	k.add(m2, func(err error) { errs = append(errs, err) })
	k.settle(m1, nil)
	k.failAll(cluster.ErrClosed)
	k.settle(m2, nil)
	if len(errs) != 2 || errs[0] != nil || !errors.Is(errs[1], cluster.ErrClosed) {
		t.Fatalf("callbacks got %v", errs)
	}
	if k.add(&nats.Msg{}, func(error) { t.Error("a keep registered after the close was called") }) {
		t.Error("a keep was registered after the close")
	}
}
