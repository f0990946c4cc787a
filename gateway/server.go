package gateway

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mew-protocol/mew/gateway/internal/audit"
	"github.com/mew-protocol/mew/gateway/internal/clusterlink"
)

// Server is a MEW gateway: an http.Handler that serves WebSocket connections
// (at / and /ws) and the HTTP API for the spaces it hosts.
//
// Goroutines: each WebSocket connection has a reader goroutine, which owns
// a writer goroutine while there is something to write, except while it is
// parked (park.go), when the server's poller goroutine watches it; each
// output_log participant has a writer goroutine owned by the server, and so
// are the webhook notifiers' loops and workers. Close stops them all.
type Server struct {
	opts     Options
	spaces   map[string]*liveSpace
	order    []*liveSpace
	creds    *credentials // who each token, code and session stands for
	audit    *audit.Log
	metrics  *metrics
	trim     *memTrim           // nil with Options.KeepFreeMemory
	outage   clusterlink.Outage // the cluster connection as the watchdog last saw it (shared.go)
	mux      *http.ServeMux
	handler  http.Handler // mux behind the connection limits
	started  time.Time
	conns    connTable
	pending  pendingTable
	errorLog *log.Logger
	hosts    *hostGuard   // the Host allow-list (hosts.go)
	lineages *lineageGate // the lineage API's limits and indexes (lineage.go)

	lazyMu sync.Mutex // serialises lazy connects of output_log participants

	mu         sync.Mutex
	closed     bool
	wg         sync.WaitGroup // connection handlers and virtual writers
	parker     *poller        // parked idle connections (park.go); nil until the first
	parkFailed bool           // no poller could be made: connections don't park

	stopWatch chan struct{} // closed by Close to stop the watchdog
	watchDone chan struct{} // closed when the watchdog has returned
}

// watchdog cancels sessions whose current write has taken longer than
// WriteTimeout, ends pauses whose timeout has passed, trims memory after a
// burst of joins or leaves (memTrim), and tells participants when the node
// loses and regains its cluster (clusterOutage). It is the server's only
// goroutine of its own, besides the webhook notifiers' (notify.go).
func (srv *Server) watchdog() {
	defer close(srv.watchDone)
	period := min(max(srv.opts.Timing.WriteTimeout/4, 10*time.Millisecond), time.Second)
	t := time.NewTicker(period)
	defer t.Stop()
	limit := int64(srv.opts.Timing.WriteTimeout)
	for {
		select {
		case <-srv.stopWatch:
			return
		case <-t.C:
		}
		srv.trimMemory()
		srv.clusterOutage()
		now := nanotime()
		for _, sp := range srv.order {
			sp.expirePauses(srv.now())
			sp.settleDue(srv.now())
			sp.watchTokens(srv.now())
			sp.expireClaims(srv.now())
			sp.expireApprovals(srv.now())
			sp.mu.Lock()
			roster := sp.roster
			sp.mu.Unlock()
			for _, s := range roster {
				if s.stuck(now, limit) {
					srv.opts.Logger.Info("write timeout", "space", sp.id, "participant", s.id)
				}
			}
		}
	}
}

// trimMemory gives free memory back to the operating system when memTrim
// says a burst of joins or leaves is over.
func (srv *Server) trimMemory() {
	if srv.trim == nil {
		return
	}
	if srv.trim.tick(time.Now()) {
		before, start := releasedBytes(), time.Now()
		srv.trim.free()
		srv.opts.Logger.Debug("returned free memory to the operating system", "bytes", releasedBytes()-before, "took", time.Since(start))
	}
}

// New returns a server for opts.Spaces. It loads or creates each
// participant's tokens, opens the audit log, and connects the output_log
// participants marked auto_connect.
func New(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if len(opts.Spaces) == 0 {
		return nil, fmt.Errorf("gateway: no space to serve")
	}
	hosts, err := newHostGuard(opts.AllowedHosts)
	if err != nil {
		return nil, err
	}
	srv := &Server{
		opts:    opts,
		spaces:  make(map[string]*liveSpace),
		creds:   newCredentials(),
		metrics: newMetrics(),
		started: opts.Now(),
	}
	srv.hosts = hosts
	if !opts.KeepFreeMemory {
		srv.trim = newMemTrim()
	}
	srv.conns = connTable{max: int64(opts.Limits.MaxConnections), soft: int64(opts.Limits.MaxConnections - opts.Limits.ConnectionHeadroom),
		refused: srv.metrics.connRefused.WithLabelValues("full")}
	srv.pending = pendingTable{max: opts.Limits.MaxPending, perAddr: opts.Limits.MaxPendingPerAddr,
		gauge: srv.metrics.pending, refused: srv.metrics.connRefused.WithLabelValues("unauthenticated")}
	srv.errorLog = slog.NewLogLogger(opts.Logger.Handler(), slog.LevelWarn)
	for _, cfg := range opts.Spaces {
		if _, dup := srv.spaces[cfg.Space.ID]; dup {
			return nil, fmt.Errorf("gateway: space %q configured twice", cfg.Space.ID)
		}
		sp, err := newLiveSpace(srv, cfg)
		if err != nil {
			return nil, err
		}
		srv.spaces[sp.id] = sp
		srv.order = append(srv.order, sp)
		for _, m := range sp.order {
			if err := srv.creds.addTokens(sp, m); err != nil {
				return nil, err
			}
		}
	}
	if err := srv.startNotifiers(); err != nil {
		return nil, err
	}
	if err := srv.openAudit(); err != nil {
		srv.closeNotifiers()
		return nil, err
	}
	if err := srv.clusterStart(); err != nil {
		srv.closeNotifiers()
		_ = srv.audit.Close()
		return nil, err
	}
	srv.routes()
	srv.stopWatch = make(chan struct{})
	srv.watchDone = make(chan struct{})
	go srv.watchdog()
	for _, sp := range srv.order {
		for _, p := range sp.cfg.Participants {
			if p.OutputLog != "" && p.AutoConnect {
				if err := srv.connectVirtual(sp, sp.resolve(p.ID)); err != nil {
					_ = srv.Close(context.Background())
					return nil, err
				}
			}
		}
	}
	return srv, nil
}

// auditDir is the audit log's directory: Options.Audit.Dir, or the logs
// directory of the first space.
func (srv *Server) auditDir() string {
	if srv.opts.Audit.Dir != "" {
		return srv.opts.Audit.Dir
	}
	return filepath.Join(srv.order[0].cfg.MewDir, "logs")
}

func (srv *Server) openAudit() error {
	first := srv.order[0].cfg
	dir := srv.auditDir()
	lg := first.Logging
	on := !srv.opts.Audit.Off && lg.Enabled
	a, err := audit.Open(audit.Options{
		Dir:                 dir,
		EnvelopeHistory:     on && lg.EnvelopeHistory,
		CapabilityDecisions: on && lg.CapabilityDecisions,
		ReceivedOnly:        srv.opts.Audit.ReceivedOnly,
		MaxFileSize:         srv.opts.Audit.MaxFileSize,
		MaxFiles:            srv.opts.Audit.MaxFiles,
		Format:              srv.opts.Audit.Format,
		QueueSize:           srv.opts.Audit.QueueSize,
		Logger:              srv.opts.Logger,
	})
	if err != nil {
		return fmt.Errorf("gateway: audit log: %w", err)
	}
	srv.audit = a
	srv.metrics.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "mew_gateway_audit_lost_lines_total",
			Help: "Audit log lines not written because writing failed (a full disk, say); routing went on.",
		}, func() float64 { return float64(a.Stats().Lost) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "mew_gateway_audit_errors_total",
			Help: "Failed audit log writes, flushes and rotations.",
		}, func() float64 { return float64(a.Stats().Errors) }),
	)
	return nil
}

func (srv *Server) now() time.Time { return srv.opts.Now() }

// ServeHTTP serves WebSocket upgrades and the HTTP API.
func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { srv.handler.ServeHTTP(w, r) }

// track registers a connection handler or writer; it fails once the server
// is closing.
func (srv *Server) track() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closed {
		return false
	}
	srv.wg.Add(1)
	return true
}

// parking returns the poller for parked connections, started on first use,
// or nil once the server is closing or when there can be none.
func (srv *Server) parking() *poller {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.closed || srv.parkFailed {
		return nil
	}
	if srv.parker == nil {
		p, err := newPoller()
		if err != nil {
			srv.parkFailed = true
			srv.opts.Logger.Warn("idle connections will not park", "err", err)
			return nil
		}
		srv.parker = p
	}
	return srv.parker
}

// Close disconnects every participant with 1001 "going away", waits for
// their goroutines (at most until ctx ends), then flushes and closes the
// audit log, so that nothing accepted is lost. It does not close listeners:
// shut the http.Server down first.
func (srv *Server) Close(ctx context.Context) error {
	srv.mu.Lock()
	if srv.closed {
		srv.mu.Unlock()
		return ErrClosed
	}
	srv.closed = true
	srv.mu.Unlock()
	for _, sp := range srv.order {
		sp.closeAll(websocket.StatusGoingAway, "gateway shutting down")
	}
	done := make(chan struct{})
	go func() { srv.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("gateway: close: %w", ctx.Err())
	}
	srv.mu.Lock()
	p := srv.parker
	srv.mu.Unlock()
	if p != nil {
		p.close() // after the connections; any still parked read on without it
	}
	// The watchdog runs until here: it unblocks writers stuck on peers that
	// stopped reading while the server was closing.
	close(srv.stopWatch)
	<-srv.watchDone
	srv.closeNotifiers() // after the watchdog, which escalates; pending notifications stay spooled
	srv.clusterStop(ctx) // after the connections: their presence leaves are written

	if aerr := srv.audit.Close(); aerr != nil && err == nil {
		err = fmt.Errorf("gateway: close audit log: %w", aerr)
	}
	return err
}

// delivered counts and logs one envelope queued for rcpts.
//
// everyone says that rcpts is every participant connected but the one a
// presence is about: the compact audit layout then writes their number, not
// their list, so that a join costs the audit log the same however large the
// space.
func (srv *Server) delivered(sp *liveSpace, d delivery, rcpts []audit.Recipient, everyone bool) {
	srv.metrics.delivered(d.kind, len(rcpts))
	if len(rcpts) == 0 {
		return
	}
	logged := d.data
	if d.logged != nil {
		logged = d.logged
	}
	srv.audit.Envelope(audit.EnvelopeRecord{
		Time: d.at, Event: "delivered", ID: d.id, Envelope: logged,
		Abridged: d.abridged, AbridgedMeta: d.abridgedMeta,
		Recipients: rcpts, Everyone: everyone, Space: sp.id,
	})
}

// connectVirtual joins an output_log participant: everything delivered to it
// is appended to its file.
func (srv *Server) connectVirtual(sp *liveSpace, m *member) error {
	sk, err := openFileSink(sp.cfg.Resolve(m.cfg.OutputLog))
	if err != nil {
		return fmt.Errorf("gateway: output_log of %s: %w", m.name, err)
	}
	if !srv.track() {
		sk.close(0, "")
		return ErrClosed
	}
	s := newSession(sp, m, m.name, transportVirtual, srv.opts.Limits.VirtualQueue, 4*srv.opts.Limits.SendQueueBytes, sk)
	if r := sp.attach(s); r != nil {
		srv.wg.Done()
		sk.close(0, "")
		return fmt.Errorf("gateway: connect %s: %w", m.name, r)
	}
	go func() {
		defer srv.wg.Done()
		s.run(nil)
		sp.detach(s)
	}()
	return nil
}

// connectLazily connects an output_log participant on its first HTTP post,
// as the reference gateway does.
func (srv *Server) connectLazily(sp *liveSpace, m *member) {
	if m.cfg == nil || m.cfg.OutputLog == "" {
		return
	}
	srv.lazyMu.Lock()
	defer srv.lazyMu.Unlock()
	sp.mu.Lock()
	connected := m.sess != nil
	sp.mu.Unlock()
	if connected {
		return
	}
	if err := srv.connectVirtual(sp, m); err != nil {
		srv.opts.Logger.Error("lazy connect failed", "participant", m.name, "space", sp.id, "err", err)
	}
}

// space returns the space an HTTP request names, or the only one.
func (srv *Server) space(id string) *liveSpace {
	if id == "" || (id == "default" && len(srv.order) == 1) {
		return srv.order[0]
	}
	return srv.spaces[id]
}
