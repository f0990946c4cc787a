package protocol

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

var fixedTime = time.Date(2026, 11, 22, 10, 3, 38, 358_000_000, time.UTC)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The hot paths keep their allocation budgets: decoding a chat envelope costs
// one string buffer and one payload copy; validating and encoding cost none.
func TestAllocationBudgets(t *testing.T) {
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("allocation counts differ under -cover and -race")
	}
	var d Decoder
	var env Envelope
	budgets := []struct {
		name string
		max  float64
		fn   func()
	}{
		{"Decoder.Decode chat", 2, func() { _ = d.Decode(benchChat, &env) }},
		{"Decoder.Decode mcp/request", 3, func() { _ = d.Decode(benchMCPRequest, &env) }},
		{"ValidateComplete", 0, func() { _ = env.ValidateComplete() }},
		{"AppendJSON", 0, func() { buf = env.AppendJSON(buf[:0]) }},
	}
	for _, b := range budgets {
		b.fn() // warm the pools and env
		if got := testing.AllocsPerRun(200, b.fn); got > b.max {
			t.Errorf("%s: %v allocations, budget %v", b.name, got, b.max)
		}
	}
}

var buf = make([]byte, 0, 1024)

func TestConcurrentUse(t *testing.T) {
	// Decode, UnmarshalJSON and Validate share pools; -race checks them.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				src := benchMCPRequest
				if (i+j)%2 == 0 {
					src = benchChat
				}
				env, err := Decode(src)
				if err != nil {
					t.Error(err)
					return
				}
				if err := env.ValidateComplete(); err != nil {
					t.Error(err)
					return
				}
				if string(env.AppendJSON(nil)) != string(src) {
					t.Error("round trip differs")
					return
				}
			}
		})
	}
	wg.Wait()
}
