package gateway_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/gateway"
	"github.com/mew-protocol/mew/internal/testutil"
)

// parkWait is longer than the gateway's park delay (500 ms) with room for
// a loaded machine.
const parkWait = 1500 * time.Millisecond

const parkSpace = `
space: {id: park}
participants:
  alice: {tokens: [alice-token], capabilities: [{kind: "*"}]}
  bob: {tokens: [bob-token], capabilities: [{kind: chat}]}
  carol: {tokens: [carol-token], capabilities: [{kind: chat}]}
`

// idleSpace has n participants idle0..idle{n-1} with tokens idle-token-i.
func idleSpace(n int) string {
	var b strings.Builder
	b.WriteString("space: {id: idle}\nparticipants:\n  alice: {tokens: [alice-token], capabilities: [{kind: chat}]}\n")
	for i := range n {
		fmt.Fprintf(&b, "  idle%d: {tokens: [idle-token-%d], capabilities: [{kind: chat}]}\n", i, i)
	}
	return b.String()
}

// TestIdleConnectionsPark: idle connections cost no goroutine each once
// they have been silent for a moment, stay members of the space, and the
// gateway stops everything it started when it closes.
func TestIdleConnectionsPark(t *testing.T) {
	const n = 40
	g := testutil.StartGateway(t, idleSpace(n), gateway.Options{})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	base := runtime.NumGoroutine()
	for i := range n {
		testutil.DialStalled(t, g.WSURL, fmt.Sprintf("idle-token-%d", i)) // no goroutine of the test's
	}
	for range n {
		alice.ExpectFunc("system/presence", func(m testutil.Msg) bool { return m.Payload()["event"] == "join" })
	}
	// Parked: n connections hold far fewer than n goroutines (without
	// parking each holds its reader's).
	extra := runtime.NumGoroutine() - base
	for deadline := time.Now().Add(5 * time.Second); extra >= n/4 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		extra = runtime.NumGoroutine() - base
	}
	if extra >= n/4 {
		t.Fatalf("%d idle connections hold %d goroutines", n, extra)
	}
	// Still members: nobody left.
	if m, quiet := alice.Quiet(300*time.Millisecond, nil); !quiet {
		t.Fatalf("alice got %s", m.Raw)
	}
	// Counted, alice's among them.
	if got := parkedGauge(t, g); got != n+1 {
		t.Fatalf("mew_gateway_parked_connections %d, want %d", got, n+1)
	}
	// Alice speaks, her reader resumes and then parks again: counted once.
	alice.SendText(`{"kind":"chat","payload":{"text":"awake"}}`)
	alice.Expect("chat")
	time.Sleep(parkWait)
	if got := parkedGauge(t, g); got != n+1 {
		t.Fatalf("mew_gateway_parked_connections %d after alice spoke and fell silent, want %d again", got, n+1)
	}
	// The poller is the server's, and stops with it, as do the readers.
	if !strings.Contains(goroutines(), "gateway.(*poller).loop") {
		t.Fatal("no poller goroutine")
	}
	g.Stop(t)
	deadline := time.Now().Add(5 * time.Second)
	for strings.Contains(goroutines(), "gateway.(*poller).loop") || strings.Contains(goroutines(), "gateway.(*joinedConn).run") {
		if time.Now().After(deadline) {
			t.Fatalf("still running after Close:\n%s", goroutines())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// parkedGauge reads mew_gateway_parked_connections.
func parkedGauge(t *testing.T, g *testutil.Gateway) int {
	t.Helper()
	res, err := http.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "mew_gateway_parked_connections "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("parked gauge %q", v)
			}
			return n
		}
	}
	t.Fatalf("no mew_gateway_parked_connections in /metrics: %v", sc.Err())
	return 0
}

// goroutines is the stacks of all goroutines.
func goroutines() string {
	for b := make([]byte, 1<<20); ; b = make([]byte, 2*len(b)) {
		if n := runtime.Stack(b, true); n < len(b) {
			return string(b[:n])
		}
	}
}

// TestParkedConnectionWorks: a parked connection gets what is sent to it,
// its messages arrive whole and in order, it answers pings and pongs, parks
// again, and is kicked like any other.
func TestParkedConnectionWorks(t *testing.T) {
	g := testutil.StartGateway(t, parkSpace, gateway.Options{})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob, _ := testutil.Join(t, g.WSURL, "bob-token")
	alice.ExpectFunc("system/presence", func(m testutil.Msg) bool { return m.Payload()["event"] == "join" })

	for round := range 2 { // the second parks a socket already watched
		time.Sleep(parkWait)
		alice.SendText(fmt.Sprintf(`{"kind":"chat","to":["bob"],"payload":{"text":"to bob %d"}}`, round))
		bob.ExpectFunc("chat", func(m testutil.Msg) bool { return m.Payload()["text"] == fmt.Sprintf("to bob %d", round) })
		time.Sleep(parkWait)
		for i := range 3 {
			bob.SendText(fmt.Sprintf(`{"kind":"chat","payload":{"text":"from bob %d.%d"}}`, round, i))
		}
		for i := range 3 {
			want := fmt.Sprintf("from bob %d.%d", round, i)
			if m := alice.ExpectFunc("chat", func(m testutil.Msg) bool { return m.From() == "bob" }); m.Payload()["text"] != want {
				t.Fatalf("alice got %s, want %q next", m.Raw, want)
			}
		}
	}

	// A message in two frames with a wait longer than the park delay
	// between them is read whole.
	time.Sleep(parkWait)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	w, err := bob.Conn.Writer(ctx, websocket.MessageText)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(`{"kind":"chat","payload":{"text":"in two`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(parkWait)
	if _, err := w.Write([]byte(` frames"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	alice.ExpectFunc("chat", func(m testutil.Msg) bool { return m.Payload()["text"] == "in two frames" })

	// The parked gateway answers a ping.
	time.Sleep(parkWait)
	if err := bob.Conn.Ping(ctx); err != nil {
		t.Fatalf("ping of a parked connection: %v", err)
	}

	// Kicked while parked.
	time.Sleep(parkWait)
	alice.SendText(`{"id":"k1","kind":"space/kick","payload":{"participant_id":"bob","reason":"parked too long"}}`)
	if code, reason := bob.Closed(5 * time.Second); code != gateway.CloseKicked || !strings.Contains(reason, "parked too long") {
		t.Fatalf("kicked with %v %q", code, reason)
	}
	alice.ExpectFunc("system/presence", func(m testutil.Msg) bool { return m.Payload()["event"] == "leave" })
}

// TestParkedPings: the gateway's pings reach parked connections; a peer
// that answers stays, and one that does not is dropped.
func TestParkedPings(t *testing.T) {
	g := testutil.StartGateway(t, parkSpace, gateway.Options{Timing: gateway.Timing{PingInterval: time.Second, PongTimeout: 500 * time.Millisecond}})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	testutil.Join(t, g.WSURL, "bob-token") // reads, so answers pings
	testutil.DialStalled(t, g.WSURL, "carol-token")
	joined := map[string]bool{}
	for len(joined) < 2 {
		m := alice.ExpectFunc("system/presence", func(m testutil.Msg) bool { return m.Payload()["event"] == "join" })
		joined[m.Payload()["participant"].(map[string]any)["id"].(string)] = true
	}
	// Carol parks after 0.5 s, is pinged at 1 s and dropped at 1.5 s.
	m := alice.Within(4*time.Second, "carol's leave", func(m testutil.Msg) bool {
		return m.Kind() == "system/presence" && m.Payload()["event"] == "leave"
	})
	if id := m.Payload()["participant"].(map[string]any)["id"]; id != "carol" {
		t.Fatalf("%v left", id)
	}
	// Bob, pinged while parked three times over, answers and stays.
	if m, quiet := alice.Quiet(3500*time.Millisecond, nil); !quiet {
		t.Fatalf("alice got %s", m.Raw)
	}
}

// rawPeer is a WebSocket client written by hand, so that a test chooses
// where the bytes of its frames are cut.
type rawPeer struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, wsURL, token string) *rawPeer {
	t.Helper()
	u, err := url.Parse(wsURL)
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	var key [16]byte
	_, _ = rand.Read(key[:])
	fmt.Fprintf(nc, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer %s\r\n\r\n",
		u.RequestURI(), u.Host, base64.StdEncoding.EncodeToString(key[:]), token)
	br := bufio.NewReader(nc)
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(br, nil)
	if err != nil || res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v", res, err)
	}
	return &rawPeer{t: t, nc: nc, br: br}
}

// frame encodes one masked client frame.
func frame(fin bool, op byte, payload []byte) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	out := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		out = append(out, 0x80|byte(n))
	case n <= 0xffff:
		out = append(out, 0x80|126, byte(n>>8), byte(n))
	default:
		out = append(out, 0x80|127)
		out = binary.BigEndian.AppendUint64(out, uint64(n))
	}
	mask := [4]byte{0x12, 0x34, 0x56, 0x78}
	out = append(out, mask[:]...)
	for i, c := range payload {
		out = append(out, c^mask[i%4])
	}
	return out
}

func (p *rawPeer) write(b []byte) {
	p.t.Helper()
	if _, err := p.nc.Write(b); err != nil {
		p.t.Fatal(err)
	}
}

// next reads the next frame from the gateway (unmasked): its opcode and
// payload.
func (p *rawPeer) next() (byte, []byte) {
	p.t.Helper()
	_ = p.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	var h [2]byte
	if _, err := readFull(p.br, h[:]); err != nil {
		p.t.Fatal(err)
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var e [2]byte
		if _, err := readFull(p.br, e[:]); err != nil {
			p.t.Fatal(err)
		}
		n = uint64(binary.BigEndian.Uint16(e[:]))
	case 127:
		var e [8]byte
		if _, err := readFull(p.br, e[:]); err != nil {
			p.t.Fatal(err)
		}
		n = binary.BigEndian.Uint64(e[:])
	}
	b := make([]byte, n)
	if _, err := readFull(p.br, b); err != nil {
		p.t.Fatal(err)
	}
	return h[0] & 0x0f, b
}

// control skips data frames (copies of what the peer sent) and returns
// the next control frame's payload.
func (p *rawPeer) control() []byte {
	p.t.Helper()
	for {
		if op, b := p.next(); op >= 8 {
			return b
		}
	}
}

func readFull(r *bufio.Reader, b []byte) (int, error) {
	for i := range b {
		c, err := r.ReadByte()
		if err != nil {
			return i, err
		}
		b[i] = c
	}
	return len(b), nil
}

// TestParkedFramesCutAnywhere: frames whose bytes come apart, with waits
// longer than the park delay between the pieces (inside a header, inside
// a payload, between the frames of one message, inside a ping), are read
// whole and in order.
func TestParkedFramesCutAnywhere(t *testing.T) {
	g := testutil.StartGateway(t, parkSpace, gateway.Options{})
	alice, _ := testutil.Join(t, g.WSURL, "alice-token")
	bob := dialRaw(t, g.WSURL, "bob-token")
	for {
		op, b := bob.next()
		if op == 1 && strings.Contains(string(b), `"system/welcome"`) {
			break
		}
	}
	alice.ExpectFunc("system/presence", func(m testutil.Msg) bool { return m.Payload()["event"] == "join" })
	chat := func(text string) []byte {
		return []byte(`{"kind":"chat","payload":{"text":"` + text + `"}}`)
	}

	time.Sleep(parkWait)
	f := frame(true, 1, chat("cut in the header"))
	bob.write(f[:1])
	time.Sleep(parkWait)
	bob.write(f[1:4])
	time.Sleep(parkWait)
	bob.write(f[4:10])
	time.Sleep(parkWait)
	bob.write(f[10:])
	alice.ExpectFunc("chat", func(m testutil.Msg) bool { return m.Payload()["text"] == "cut in the header" })

	// Two frames of one message, a ping between them cut in two.
	time.Sleep(parkWait)
	msg := chat("fragmented")
	ping := frame(true, 9, []byte("hello"))
	bob.write(frame(false, 1, msg[:10]))
	time.Sleep(parkWait)
	bob.write(ping[:3])
	time.Sleep(parkWait)
	bob.write(ping[3:])
	if b := bob.control(); string(b) != "hello" {
		t.Fatalf("pong %q", b)
	}
	time.Sleep(parkWait)
	bob.write(frame(true, 0, msg[10:]))
	bob.write(frame(true, 1, chat("after")))
	alice.ExpectFunc("chat", func(m testutil.Msg) bool { return m.Payload()["text"] == "fragmented" })
	if m := alice.Expect("chat"); m.Payload()["text"] != "after" {
		t.Fatalf("alice got %s", m.Raw)
	}

	// A message larger than the library's reader buffer, its payload cut.
	time.Sleep(parkWait)
	big := chat(strings.Repeat("x", 5000))
	f = frame(true, 1, big)
	bob.write(f[:3000])
	time.Sleep(parkWait)
	bob.write(f[3000:])
	alice.ExpectFunc("chat", func(m testutil.Msg) bool { return len(m.Payload()["text"].(string)) == 5000 })

	// A close frame to a parked connection ends it with a close handshake.
	time.Sleep(parkWait)
	bob.write(frame(true, 8, []byte{0x03, 0xe8}))
	if b := bob.control(); len(b) < 2 || binary.BigEndian.Uint16(b) != 1000 {
		t.Fatalf("close frame %q", b)
	}
	alice.ExpectFunc("system/presence", func(m testutil.Msg) bool { return m.Payload()["event"] == "leave" })
}
