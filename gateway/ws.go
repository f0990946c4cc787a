package gateway

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/mew-protocol/mew/internal/clip"
	"github.com/mew-protocol/mew/protocol"
	"github.com/mew-protocol/mew/space"
)

// serveWS runs one WebSocket connection: it identifies the participant,
// attaches the session to its space, and reads until the connection ends.
func (srv *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	if !srv.track() {
		http.Error(w, `{"error":"shutting_down"}`, http.StatusServiceUnavailable)
		return
	}
	// Once joined, the connection is handed to a goroutine of its own (see
	// below); until then this handler owns it and its slot of srv.wg.
	var conn *websocket.Conn
	handedOff := false
	defer func() {
		if handedOff {
			return
		}
		if conn != nil {
			_ = conn.CloseNow()
		}
		srv.wg.Done()
	}()
	token, requested := bearer(r), ""
	release := func() {}
	if token == "" {
		// Until its join message authenticates it, a connection holds a
		// slot of the pending table: nobody may keep many of them open.
		addr := remoteHost(r)
		if !srv.pending.acquire(addr) {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "too_many_connections", "too many connections are waiting to join")
			return
		}
		var once sync.Once
		release = func() { once.Do(func() { srv.pending.release(addr) }) }
		defer release()
	}
	noDeadlines(w)
	hj := &corkHijacker{ResponseWriter: w} // batches the writer's frames (session_sink.go)
	var err error
	conn, err = websocket.Accept(hj, r, &websocket.AcceptOptions{
		OriginPatterns:  srv.opts.OriginPatterns,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		srv.opts.Logger.Debug("websocket upgrade failed", "remote", r.RemoteAddr, "err", err)
		return
	}

	spaceID := r.URL.Query().Get("space")
	if token == "" {
		// Twice the join limit: a join a little too large is read and
		// answered too_large; past that the library closes with 1009.
		conn.SetReadLimit(2 * srv.opts.Limits.MaxJoinSize)
		j, ok := srv.readJoin(conn)
		release()
		if !ok {
			return
		}
		token, requested = j.token, j.participantID
		spaceID = cmp.Or(j.space, spaceID)
	}
	conn.SetReadLimit(srv.opts.Limits.MaxDiscardSize)
	sp, m := srv.joinLookup(token, spaceID) // a token, or a console session (console.go)
	if m == nil {
		srv.metrics.refusals.WithLabelValues(ErrorUnauthorized).Inc()
		msg := "unknown token for this space"
		if spaceID != "" && spaceID != "default" && srv.spaces[spaceID] == nil {
			// A mistyped space is not a bad token: say which is wrong.
			msg = fmt.Sprintf("no space %q on this gateway", clip.Runes(spaceID, 64))
		}
		srv.reject(conn, refuse(ErrorUnauthorized, msg))
		return
	}
	id := m.name
	if requested != "" && requested != m.name {
		if err := space.ValidParticipantID(requested); err != nil {
			srv.reject(conn, refuse(ErrorIdentityMismatch, "participant id: "+err.Error()))
			return
		}
		id = requested // a runtime alias of m (spec 3.6.4)
	}
	nc := hj.nc // not hj, which holds net/http's response and all it refers to
	s := newSession(sp, m, id, transportWebSocket, srv.opts.Limits.SendQueue, srv.opts.Limits.SendQueueBytes, wsSink{conn: conn, nc: nc})
	if v := r.URL.Query().Get("resume"); v != "" {
		s.resume = v[:min(len(v), maxResumeID+1)] // a longer one is found nowhere: a gap
	}
	// Reads and writes pass the library no context (a cancellable one costs
	// a registration per message); cancelling the session closes the socket,
	// and gives a parked connection a reader that sees it closed (park.go).
	jc := newJoinedConn(srv, conn, s, nc)
	stopClosing := context.AfterFunc(s.ctx, func() {
		_ = nc.Conn.Close()
		jc.resume()
	})
	jc.stopClosing = stopClosing
	// A join is recorded (its welcome and presence): under back-pressure
	// from the audit log it waits here, holding no lock.
	if srv.audit.WaitRoom(r.Context()) != nil {
		stopClosing()
		return
	}
	if rf := sp.attach(s); rf != nil {
		stopClosing()
		srv.reject(conn, rf)
		return
	}
	srv.opts.Logger.Info("participant joined", "space", sp.id, "participant", id, "as", m.name, "remote", r.RemoteAddr)
	// net/http's goroutine keeps the request, the response and their
	// buffers (about 10 KB) alive for as long as the handler runs, so a
	// fresh goroutine, which now owns the connection and the srv.wg slot,
	// serves it, and the handler returns.
	handedOff = true
	s.startPings(conn.Ping)
	go jc.run()
}

// maxResumeID bounds the envelope id a resuming client names (ids the
// gateway accepts are shorter); a longer one is kept cut, and found
// nowhere.
const maxResumeID = 256

// maxPeek is how much of an oversized message is searched for its id.
const maxPeek = 64 << 10

// readMessage reads one message into buf. Past limit it reads the rest into
// nothing and reports over; the library bounds how much that can be.
func readMessage(r io.Reader, buf []byte, limit int64) ([]byte, bool, error) {
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				_, err := io.Copy(io.Discard, r)
				return buf, true, err // its beginning, for the id
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, int64(len(buf)) > limit, nil
		}
		if err != nil {
			return buf, false, err
		}
	}
}

// readJoin reads the join message of a connection without a bearer header.
// When there is none it refuses the connection and returns false.
func (srv *Server) readJoin(conn *websocket.Conn) (joinRequest, bool) {
	// A read deadline would close the connection before the error could be
	// sent, so a timer refuses the connection and the read then fails.
	fired := make(chan struct{})
	timer := time.AfterFunc(srv.opts.Timing.JoinTimeout, func() {
		defer close(fired)
		srv.reject(conn, refuse(ErrorJoinRequired, "no join message within "+srv.opts.Timing.JoinTimeout.String()))
	})
	_, rd, err := conn.Reader(context.Background())
	var data []byte
	var over bool
	if err == nil {
		data, over, err = readMessage(rd, nil, srv.opts.Limits.MaxJoinSize)
	}
	if !timer.Stop() {
		<-fired
		return joinRequest{}, false
	}
	if err != nil {
		return joinRequest{}, false // the peer went away
	}
	if over {
		srv.reject(conn, tooLarge(srv.opts.Limits.MaxJoinSize))
		return joinRequest{}, false
	}
	j, ok := parseJoin(data)
	if !ok {
		srv.reject(conn, refuse(ErrorJoinRequired, `the first message must be a join ({"type":"join",...} or kind system/join) or the connection must carry an Authorization: Bearer header`))
	}
	return j, ok
}

// reject answers a connection that could not join and closes it with 1008.
func (srv *Server) reject(conn *websocket.Conn, rf *refusal) {
	srv.opts.Logger.Info("connection refused", "error", rf.code, "message", rf.message)
	env := protocol.Envelope{
		Protocol: protocol.Version, ID: protocol.NewID(), TS: protocol.FormatTime(srv.now()),
		From: protocol.GatewayID, Kind: protocol.KindSystemError,
	}
	p := protocol.AppendString(append([]byte(nil), `{"error":`...), rf.code)
	p = append(protocol.AppendString(append(p, `,"message":`...), rf.message), '}')
	env.Payload = p
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Write(ctx, websocket.MessageText, env.AppendJSON(nil))
	reason := rf.code
	if !utf8.ValidString(reason) || len(reason) > 120 {
		reason = "refused"
	}
	_ = conn.Close(websocket.StatusPolicyViolation, reason)
}

// bearer returns the token of an Authorization: Bearer header.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}
