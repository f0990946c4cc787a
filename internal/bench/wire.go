package bench

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/mew-protocol/mew/protocol"
)

// Bench envelope ids carry what a receiver needs: a marker naming the run (and for rpc the pair),
// then dash-separated decimal numbers, the last of which is the send time in nanoseconds since
// the run's start.
//
//	fanout chat        b<nonce>-<sender>-<seq>-<ns>
//	rpc mcp/request    r<nonce>-<pair>-<seq>-<ns>
//	rpc mcp/response   a<nonce>-<pair>-<seq>-<ns>   (the numbers of the request it answers)

// containsErr reports whether msg looks like a system/error. A receiver that finds its run's
// marker in one counts an error, not a delivery: the gateway puts the offending id in the
// error's correlation_id.
func containsErr(msg []byte) bool { return bytes.Contains(msg, []byte(protocol.KindSystemError)) }

// parseNums reads len(out) dash-separated non-negative decimal numbers from the start of b.
func parseNums(b []byte, out []int64) bool {
	for k := range out {
		if k > 0 {
			if len(b) == 0 || b[0] != '-' {
				return false
			}
			b = b[1:]
		}
		var v int64
		n := 0
		for n < len(b) && b[n] >= '0' && b[n] <= '9' && n < 18 {
			v = v*10 + int64(b[n]-'0')
			n++
		}
		if n == 0 {
			return false
		}
		out[k] = v
		b = b[n:]
	}
	return true
}

// findNums finds marker in msg and parses the numbers after it into out.
func findNums(msg, marker []byte, out []int64) bool {
	j := bytes.Index(msg, marker)
	return j >= 0 && parseNums(msg[j+len(marker):], out)
}

// appendID appends marker followed by the numbers, dash-separated.
func appendID(dst []byte, marker string, nums ...int64) []byte {
	dst = append(dst, marker...)
	for k, v := range nums {
		if k > 0 {
			dst = append(dst, '-')
		}
		dst = strconv.AppendInt(dst, v, 10)
	}
	return dst
}

// padding returns n bytes of text that need no JSON escaping and contain no marker.
func padding(n int) string { return strings.Repeat("x", n) }
