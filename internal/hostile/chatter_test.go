package hostile

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mew-protocol/mew/internal/testutil"
	"github.com/mew-protocol/mew/protocol"
)

// TestHostileChatter (class 8): one participant sends the agent (`mew
// agent run`, a child process, its model taking 200 ms an answer) 20
// chats a second for 5 s. Another asker's questions, asked meanwhile, are
// each answered within a few seconds (askers take turns); every chat of
// the chatter that the agent acknowledged gets an answer or the word that
// it was dropped; the agent's memory stays bounded and the bystanders'
// chats flow.
func TestHostileChatter(t *testing.T) {
	g := startSpace(t)
	human, asker, chatter := join(t, g, "human"), join(t, g, "asker"), join(t, g, "chatter")
	heardHuman, heardAsker, heardChatter := listen(human), listen(asker), listen(chatter)
	var ackMu sync.Mutex
	acked := map[string]bool{}
	chatter.Client().OnKind(protocol.KindChatAcknowledge, func(env *protocol.Envelope) {
		if env.From == "agent" && len(env.CorrelationID) > 0 {
			ackMu.Lock()
			acked[env.CorrelationID[0]] = true
			ackMu.Unlock()
		}
	})
	model := hostileModel(t, 200*time.Millisecond)
	a := startAgent(t, g, model.URL+"/v1", time.Minute, human, heardHuman)
	by := startBystander(t, g)

	// The chatter's 100 chats, 50 ms apart, on a goroutine of the test.
	var sent []string
	floodDone := make(chan error, 1)
	ctx := testutil.Context(t, 30*time.Second)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := range 100 {
			id, err := chatter.Chat(ctx, fmt.Sprintf("chatter %d", i), "agent")
			if err != nil {
				floodDone <- fmt.Errorf("chatter's chat %d: %w", i, err)
				return
			}
			sent = append(sent, id)
			<-tick.C
		}
		floodDone <- nil
	}()
	var worst time.Duration
	for i := range 3 {
		time.Sleep(time.Second)
		start := time.Now()
		q := ask(t, asker, fmt.Sprintf("the asker's question %d", i))
		got := heardAsker.answerTo(t, q, 10*time.Second)
		took := time.Since(start)
		worst = max(worst, took)
		if !strings.HasPrefix(got, "fine:") {
			t.Errorf("the asker's question %d was answered %q", i, got)
		}
		if took > soon() {
			t.Errorf("the asker's question %d was answered after %v", i, took)
		}
	}
	if err := <-floodDone; err != nil {
		t.Fatal(err)
	}
	// Every acknowledged chat of the chatter gets a word: an answer, or
	// that it was dropped.
	answered, dropped := 0, 0
	testutil.WaitFor(t, 30*time.Second, "a word on every acknowledged chat of the chatter", func() bool {
		ackMu.Lock()
		defer ackMu.Unlock()
		heardChatter.mu.Lock()
		defer heardChatter.mu.Unlock()
		answered, dropped = 0, 0
		for _, id := range sent {
			text, ok := heardChatter.got[id]
			switch {
			case ok && strings.Contains(text, "too many questions waiting"):
				dropped++
			case ok:
				answered++
			case acked[id]:
				return false
			}
		}
		return true
	})
	by.check(t, time.Second)
	hwm := procStatus(t, a.pid(), "VmHWM")
	t.Logf("the asker's slowest answer %v; of the chatter's %d chats %d answered, %d dropped with a word; the agent's peak resident set %.1f MiB",
		worst, len(sent), answered, dropped, float64(hwm)/mib)
	if dropped == 0 {
		t.Error("no chat of the chatter was dropped: the attack did not fill the agent's queue")
	}
	if limit := 96 * mib * raceScale(); hwm > limit {
		t.Errorf("the agent's peak resident set is %.1f MiB, over %d MiB", float64(hwm)/mib, limit/mib)
	}
}
