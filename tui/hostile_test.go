package tui

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// TestHostileTranscriptMemory (issue 31 item 10, the hostile-peer suite's
// class 10; see docs/security.md): a peer sends 500 chats of 900 KB (160
// under the race detector), and /verbose shows each raw envelope too. The
// model's live heap, read from runtime/metrics after a collection, grows
// by no more than the transcript's byte bound and a margin (500 chats of
// 900 KB once took the UI to 1 GB).
func TestHostileTranscriptMemory(t *testing.T) {
	h := newHarness(t)
	h.typeLine("/verbose")
	before := liveHeap()
	big := strings.Repeat("0123456789abcdef", 900<<10/16)
	start := time.Now()
	for i := range hostileChats {
		h.recv(chat("assistant", fmt.Sprintf("huge-%d", i), big))
	}
	took := time.Since(start)
	after := liveHeap()
	runtime.KeepAlive(h)
	grew := int64(after) - int64(before)
	t.Logf("%d chats of 900 KB (%d MB) in %v: the live heap grew by %.1f MiB (%d entries, %.1f MiB of text held; bound %d MiB)",
		hostileChats, hostileChats*len(big)/1e6, took, float64(grew)/(1<<20), len(h.m.tr.entries), float64(h.m.tr.textBytes)/(1<<20), maxTranscriptBytes>>20)
	if limit := int64(2 * maxTranscriptBytes); grew > limit {
		t.Errorf("the live heap grew by %.1f MiB, over %d MiB", float64(grew)/(1<<20), limit>>20)
	}
	newest := fmt.Sprintf("huge-%d", hostileChats-1)
	if last, ok := h.m.tr.entries[len(h.m.tr.entries)-1].(*chatEntry); !ok || last.id != newest {
		t.Errorf("the newest chat is not the last entry: %#v", h.m.tr.entries[len(h.m.tr.entries)-1])
	}
}

// liveHeap is the heap of live objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
