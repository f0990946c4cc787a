package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"time"
)

// Scopes of an idle measurement: what the process whose memory was measured holds.
const (
	ScopeInProcess  = "client+server, in-process"
	ScopeClientOnly = "client side only"
	ScopeChild      = "server only, child process"
)

// IdleOptions configures Idle.
type IdleOptions struct {
	// Connections is how many participants join, ids bench-idle-0 ... bench-idle-(N-1).
	Connections int `json:"connections"`
	// Settle is how long the connections sit still before the measurement, long enough for the
	// presence announcements of all the joins to have been delivered.
	Settle time.Duration `json:"settle_ns"`
}

// Validate reports the first option that is out of range.
func (o IdleOptions) Validate() error {
	switch {
	case o.Connections < 1:
		return fmt.Errorf("connections must be at least 1, got %d", o.Connections)
	case o.Settle < 0:
		return fmt.Errorf("settle cannot be negative, got %v", o.Settle)
	}
	return nil
}

// IdleResult is what Idle measured.
type IdleResult struct {
	Target      string `json:"target"`
	Connections int    `json:"connections"`
	// BytesPerConn is the growth of live heap objects plus goroutine stacks, measured after
	// garbage collection, divided by Connections.
	BytesPerConn float64 `json:"bytes_per_conn"`
	// StackBytesPerConn is the part of BytesPerConn that is goroutine stacks.
	StackBytesPerConn float64 `json:"stack_bytes_per_conn"`
	// GoroutinesPerConn is the growth of the goroutine count divided by Connections.
	GoroutinesPerConn float64 `json:"goroutines_per_conn"`
	// RSSPerConn is the growth of the server process's resident set (VmRSS) divided by
	// Connections: what the operating system gives it, garbage and free heap included. Only for a
	// server in a child process (ScopeChild); 0 otherwise.
	RSSPerConn float64 `json:"rss_per_conn,omitempty"`
	// Scope says whose side the numbers include: ScopeInProcess when the target's server runs in
	// this process (client and server together), ScopeClientOnly for an external server.
	Scope string `json:"scope"`
	// JoinTime is how long the joins took, from the first dial to the last welcome.
	JoinTime time.Duration `json:"join_time_ns"`
	// AuditBytesPerJoin is the growth of the server's audit log directory over the joins and
	// the settling, divided by Connections; 0 for a target without one (the relay).
	AuditBytesPerJoin float64 `json:"audit_bytes_per_join,omitempty"`
	// Errors counts connections that failed while they sat idle.
	Errors uint64 `json:"errors"`
	// FirstError describes the first failed connection, if any.
	FirstError string `json:"first_error,omitempty"`
}

// Idle measures what an idle connection costs: it starts t, takes a baseline of the process's
// memory and goroutines, opens o.Connections connections that read but send nothing, waits
// o.Settle, and measures again. Everything runs in this process, so for a target that starts its
// server here the numbers cover both ends of each connection; see IdleResult.Scope. progress,
// if not nil, receives lines about the run's phases, from the calling goroutine.
func Idle(ctx context.Context, t Target, o IdleOptions, progress func(string)) (res IdleResult, err error) {
	if err := o.Validate(); err != nil {
		return IdleResult{}, fmt.Errorf("idle: %w", err)
	}
	if t == nil {
		return IdleResult{}, errors.New("idle: no target")
	}
	res.Target, res.Connections = t.Name(), o.Connections
	say := prefixed(t.Name(), progress)
	ids := participantIDs("bench-idle", o.Connections)
	ep, err := startTarget(ctx, t, ids)
	if err != nil {
		return res, fmt.Errorf("idle: %w", err)
	}
	defer func() {
		if cerr := ep.stop(); cerr != nil && err == nil {
			err = fmt.Errorf("idle: stop %s: %w", t.Name(), cerr)
		}
	}()
	res.Scope = ScopeClientOnly
	switch {
	case ep.inProcess():
		res.Scope = ScopeInProcess
	case ep.measure != nil:
		res.Scope = ScopeChild
	}

	f := newFleet(ctx, ep)
	defer f.close(ctx)
	before, err := measureServer(ctx, ep)
	if err != nil {
		return res, fmt.Errorf("idle: %w", err)
	}
	auditBefore := dirSize(ep.AuditDir)
	say(fmt.Sprintf("connecting %d", o.Connections))
	start := time.Now()
	if err := f.connect(ctx, ids, func(int, []byte) {}, say); err != nil {
		return res, fmt.Errorf("idle: %w", err)
	}
	res.JoinTime = time.Since(start)
	say(fmt.Sprintf("settling for %v", o.Settle))
	if !sleep(ctx, o.Settle) {
		return res, fmt.Errorf("idle: %w", context.Cause(ctx))
	}
	after, err := measureServer(ctx, ep)
	if err != nil {
		return res, fmt.Errorf("idle: %w", err)
	}

	n := float64(o.Connections)
	res.BytesPerConn = (float64(after.bytes) - float64(before.bytes)) / n
	res.StackBytesPerConn = (float64(after.stacks) - float64(before.stacks)) / n
	res.GoroutinesPerConn = (float64(after.goroutines) - float64(before.goroutines)) / n
	res.RSSPerConn = (float64(after.rss) - float64(before.rss)) / n
	if ep.AuditDir != "" {
		res.AuditBytesPerJoin = float64(dirSize(ep.AuditDir)-auditBefore) / n
	}
	res.Errors = f.failures.Load()
	if e := f.firstErr(); e != nil {
		res.FirstError = e.Error()
	}
	return res, nil
}

// dirSize is the total size of the regular files under dir, 0 when dir is "" or unreadable:
// the audit log's growth is read from it, whatever files the server rotates into.
func dirSize(dir string) int64 {
	if dir == "" {
		return 0
	}
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// processUse is a snapshot of the process's memory and goroutines.
type processUse struct {
	bytes      uint64 // live heap objects plus goroutine stacks
	stacks     uint64 // goroutine stacks alone
	goroutines uint64
	rss        uint64 // VmRSS, read only for a child
}

// measureServer measures the server's process when it is a child (its resident set first, as
// the measurement's garbage collection does not change it at once), else this one.
func measureServer(ctx context.Context, ep *Endpoint) (processUse, error) {
	if ep.measure == nil {
		return measureProcess(), nil
	}
	rss, err := childRSS(ep.PID)
	if err != nil {
		return processUse{}, err
	}
	u, err := ep.measure(ctx)
	u.rss = rss
	return u, err
}

// measureProcess collects garbage twice (the second also frees what the first left to sync.Pools
// and finalizers) and then reads the runtime's metrics. Free space in the heap's spans is left
// out: how much there is depends on what the process did before, not on the connections.
func measureProcess() processUse {
	runtime.GC()
	runtime.GC()
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/sched/goroutines:goroutines"},
	}
	metrics.Read(samples)
	var u processUse
	for _, s := range samples[:2] {
		if s.Value.Kind() == metrics.KindUint64 {
			u.bytes += s.Value.Uint64()
		}
	}
	if s := samples[1]; s.Value.Kind() == metrics.KindUint64 {
		u.stacks = s.Value.Uint64()
	}
	if s := samples[2]; s.Value.Kind() == metrics.KindUint64 {
		u.goroutines = s.Value.Uint64()
	}
	return u
}
