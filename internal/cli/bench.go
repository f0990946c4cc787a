package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/mew-protocol/mew/internal/bench"
)

// Target names for --target.
const (
	targetGateway = "gateway"
	targetRelay   = "relay"
	targetURL     = "url"
)

// benchFlags holds the flags every bench subcommand has.
type benchFlags struct {
	targets string // comma-separated target names
	url     string // an external server
	tokens  string // id=token,... for url
	json    bool   // machine-readable output
	audit   string // the gateway target's audit log: full, received or off
	save    string // write the results as JSON to this file
	compare string // a file written by --save, to compare with
	spawn   bool   // run the gateway and relay targets as child processes
	limit   bool   // the gateway target's default rate limits on
	nodes   int    // the gateway target as a cluster of this many nodes
	// relayPresence makes the relay announce each join to the others, as
	// the gateway's system/presence does (bench.RelayTarget.Presence)
	relayPresence bool
	// cpuprofile: with --spawn, each child writes a CPU profile of its
	// server to cpuprofile.<target>; in `bench serve`, the file itself
	cpuprofile string
}

// newBenchCmd returns `mew bench` with its workloads. gatewayTarget supplies the gateway as a
// target; it may be nil or return nil in builds without one.
func newBenchCmd(opts Options, gatewayTarget func() bench.Target) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure a gateway under load: fan-out, request round trips, idle connections",
		Long: `bench measures the gateway against a bare relay that forwards every message to
every connection and does nothing else, so the difference is the gateway's own work.

Each target (--target gateway,relay by default) is started in this process on
127.0.0.1 in turn, measured with the same clients, and the results are printed
side by side with the ratio gateway/relay. With --spawn each runs in a child
process instead, so that CPU time and memory are read from /proc and are the
server's alone, not the clients' too. --url measures a server that is
already running instead; its space must admit the workload's participant ids
(bench-0..., bench-req-N and bench-rsp-N, bench-idle-N) with the tokens given by
--token (id=token,...; *=token for every id).

Results go to stdout, progress to stderr.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	cmd.AddCommand(
		newBenchFanoutCmd(opts, gatewayTarget),
		newBenchRPCCmd(opts, gatewayTarget),
		newBenchIdleCmd(opts, gatewayTarget),
		newBenchServeCmd(opts, gatewayTarget),
	)
	return cmd
}

// newBenchServeCmd returns the hidden `mew bench serve TARGET`, the child that --spawn starts
// (see bench.ChildTarget).
func newBenchServeCmd(opts Options, gatewayTarget func() bench.Target) *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:    "serve gateway|relay",
		Short:  "Serve a bench target as a child process of mew bench --spawn",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if args[0] != targetGateway && args[0] != targetRelay {
				return fmt.Errorf("bench serve: target %q is not %s or %s", args[0], targetGateway, targetRelay)
			}
			f.targets = args[0]
			targets, err := benchTargets(&f, true, gatewayTarget)
			if err != nil {
				return fmt.Errorf("bench serve: %w", err)
			}
			if f.cpuprofile != "" {
				stop, err := startCPUProfile(f.cpuprofile)
				if err != nil {
					return fmt.Errorf("bench serve: %w", err)
				}
				defer stop()
			}
			return bench.ServeChild(cmd.Context(), targets[0], cmd.InOrStdin(), opts.Stdout)
		},
	}
	addTargetFlags(cmd, &f)
	return cmd
}

// benchRunE returns the RunE of a workload: it sets up the targets, runs
// the workload on each in turn and prints the results as a table or JSON.
// o points at the options the flags fill in, read when the command runs.
func benchRunE[O, R any](opts Options, f *benchFlags, name string, o *O, validate func() error,
	gatewayTarget func() bench.Target,
	run func(context.Context, bench.Target, O, func(string)) (R, error),
	ratios func([]R) []ratio,
	metrics func(R) (string, []metric),
	table func(io.Writer, O, []R) error,
) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		targets, err := benchSetup(cmd, f, validate, gatewayTarget)
		if err != nil {
			return err
		}
		var saved *benchReport[O, R]
		if f.compare != "" {
			if saved, err = readSaved[O, R](f.compare, name, *o); err != nil {
				return fmt.Errorf("bench %s: %w", name, err)
			}
		}
		results, err := runTargets(cmd.Context(), opts.Stderr, targets,
			func(ctx context.Context, t bench.Target, progress func(string)) (R, error) {
				return run(ctx, t, *o, progress)
			})
		if err != nil {
			return fmt.Errorf("bench %s: %w", name, err)
		}
		if f.save != "" {
			if err := saveReport(f.save, func(w io.Writer) error {
				return writeBenchJSON(w, name, *o, results, ratios(results), nil)
			}); err != nil {
				return fmt.Errorf("bench %s: %w", name, err)
			}
		}
		var cmp []comparison
		if saved != nil {
			if cmp, err = compareRuns(f.compare, saved, results, metrics); err != nil {
				return fmt.Errorf("bench %s: %w", name, err)
			}
		}
		if f.json {
			return writeBenchJSON(opts.Stdout, name, *o, results, ratios(results), cmp)
		}
		if err := table(opts.Stdout, *o, results); err != nil {
			return err
		}
		if cmp != nil {
			return writeComparison(opts.Stdout, f.compare, cmp)
		}
		return nil
	}
}

// addBenchFlags defines the flags every workload has.
func addBenchFlags(cmd *cobra.Command, f *benchFlags) {
	cmd.Flags().StringVar(&f.targets, "target", targetGateway+","+targetRelay,
		"comma-separated targets, measured in turn: gateway, relay, url (--url alone implies url)")
	cmd.Flags().StringVar(&f.url, "url", "", "measure a running server at this WebSocket URL (ws://host:port/ws?space=NAME)")
	cmd.Flags().StringVar(&f.tokens, "token", "", "tokens for --url: id=token,... (*=token for every id)")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the results as JSON")
	cmd.Flags().StringVar(&f.save, "save", "", "also write the results as JSON to this file, for a later --compare-to")
	cmd.Flags().StringVar(&f.compare, "compare-to", "", "compare with a run saved by --save (same workload and options but duration and warmup): print each metric with new/old")
	cmd.Flags().BoolVar(&f.spawn, "spawn", false, "run the gateway and relay in child processes, so that CPU and memory (from /proc) are the server's alone")
	addTargetFlags(cmd, f)
}

// addTargetFlags defines the flags that configure the gateway target.
func addTargetFlags(cmd *cobra.Command, f *benchFlags) {
	cmd.Flags().StringVar(&f.audit, "audit", "full", "the gateway's audit log: full, received (no delivered lines) or off")
	cmd.Flags().BoolVar(&f.limit, "rate-limit", false, "the gateway's default rate limits on (off by default: the benchmark sets the rate)")
	cmd.Flags().IntVar(&f.nodes, "nodes", 1, "run the gateway as a cluster of this many nodes on an embedded NATS server, the participants spread round robin over them")
	cmd.Flags().BoolVar(&f.relayPresence, "relay-presence", false, "the relay announces each join to everyone else, as the gateway's presence does (a like-for-like join cost)")
	cmd.Flags().StringVar(&f.cpuprofile, "cpuprofile", "", "with --spawn, write a CPU profile of each child server to FILE.gateway and FILE.relay (go tool pprof reads them)")
}

func newBenchFanoutCmd(opts Options, gatewayTarget func() bench.Target) *cobra.Command {
	var f benchFlags
	o := bench.FanoutOptions{Participants: 50, Senders: 5, Load: bench.Load{Rate: 1000, Size: 100, Duration: 10 * time.Second, Warmup: time.Second}}
	cmd := &cobra.Command{
		Use:   "fanout",
		Short: "Chat envelopes from K senders delivered to all N participants of a space",
		Args:  cobra.NoArgs,
		RunE:  benchRunE(opts, &f, "fanout", &o, func() error { return o.Validate() }, gatewayTarget, bench.Fanout, fanoutRatios, fanoutMetrics, writeFanout),
	}
	addBenchFlags(cmd, &f)
	fl := cmd.Flags()
	fl.IntVarP(&o.Participants, "participants", "n", o.Participants, "participants in the space")
	fl.IntVarP(&o.Senders, "senders", "k", o.Senders, "how many of them send")
	fl.Float64Var(&o.Rate, "rate", o.Rate, "envelopes per second over all senders (0: as fast as delivered)")
	fl.IntVar(&o.Size, "size", o.Size, "bytes of chat text per envelope")
	fl.DurationVar(&o.Duration, "duration", o.Duration, "how long to measure")
	fl.DurationVar(&o.Warmup, "warmup", o.Warmup, "how long to send before measuring")
	return cmd
}

func newBenchRPCCmd(opts Options, gatewayTarget func() bench.Target) *cobra.Command {
	var f benchFlags
	o := bench.RPCOptions{Pairs: 10, Load: bench.Load{Rate: 1000, Size: 64, Duration: 10 * time.Second, Warmup: time.Second}}
	cmd := &cobra.Command{
		Use:   "rpc",
		Short: "mcp/request → mcp/response round trips between requester/responder pairs",
		Args:  cobra.NoArgs,
		RunE:  benchRunE(opts, &f, "rpc", &o, func() error { return o.Validate() }, gatewayTarget, bench.RPC, rpcRatios, rpcMetrics, writeRPC),
	}
	addBenchFlags(cmd, &f)
	fl := cmd.Flags()
	fl.IntVar(&o.Pairs, "pairs", o.Pairs, "requester/responder pairs")
	fl.Float64Var(&o.Rate, "rate", o.Rate, "round trips per second over all pairs (0: each waits for its answer)")
	fl.IntVar(&o.Size, "size", o.Size, "bytes of text in each request's arguments and response's result")
	fl.DurationVar(&o.Duration, "duration", o.Duration, "how long to measure")
	fl.DurationVar(&o.Warmup, "warmup", o.Warmup, "how long to send before measuring")
	return cmd
}

func newBenchIdleCmd(opts Options, gatewayTarget func() bench.Target) *cobra.Command {
	var f benchFlags
	o := bench.IdleOptions{Connections: 1000, Settle: 5 * time.Second}
	cmd := &cobra.Command{
		Use:   "idle",
		Short: "Memory and goroutines per idle connection",
		Args:  cobra.NoArgs,
		RunE:  benchRunE(opts, &f, "idle", &o, func() error { return o.Validate() }, gatewayTarget, bench.Idle, idleRatios, idleMetrics, writeIdle),
	}
	addBenchFlags(cmd, &f)
	fl := cmd.Flags()
	fl.IntVar(&o.Connections, "connections", o.Connections, "idle connections to open")
	fl.DurationVar(&o.Settle, "settle", o.Settle, "how long the connections sit still before the measurement (long enough for the gateway to trim the memory the joins left free, about 2 s)")
	return cmd
}

// benchSetup checks the options and the target flags before anything starts, and returns the
// targets to measure.
func benchSetup(cmd *cobra.Command, f *benchFlags, validate func() error, gatewayTarget func() bench.Target) ([]bench.Target, error) {
	name := "bench " + cmd.Name()
	if err := validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if f.cpuprofile != "" && !f.spawn {
		return nil, fmt.Errorf("%s: --cpuprofile needs --spawn (in this process the profile would mix the clients' CPU with the server's)", name)
	}
	targets, err := benchTargets(f, cmd.Flags().Changed("target"), gatewayTarget)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return targets, nil
}

// startCPUProfile writes a CPU profile to path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// benchTargets resolves --target, --url and --token. targetSet says whether --target was given.
func benchTargets(f *benchFlags, targetSet bool, gatewayTarget func() bench.Target) ([]bench.Target, error) {
	names := f.targets
	if f.url != "" && !targetSet {
		names = targetURL
	}
	if f.tokens != "" && f.url == "" {
		return nil, errors.New("--token is for --url; give --url too")
	}
	var targets []bench.Target
	var seen []string
	for _, name := range strings.Split(names, ",") {
		name = strings.TrimSpace(name)
		if slices.Contains(seen, name) {
			continue
		}
		seen = append(seen, name)
		switch name {
		case targetGateway:
			var t bench.Target
			if gatewayTarget != nil {
				t = gatewayTarget()
				if f.nodes < 1 || f.nodes > maxBenchNodes {
					return nil, fmt.Errorf("--nodes: %d is not between 1 and %d", f.nodes, maxBenchNodes)
				}
				if gt, ok := t.(gatewayBench); ok {
					gt.rateLimit = f.limit
					gt.nodes = f.nodes
					switch f.audit {
					case "full":
					case "received":
						gt.receivedOnly = true
					case "off":
						gt.noAudit = true
					default:
						return nil, fmt.Errorf("--audit: %q is not one of full, received, off", f.audit)
					}
					t = gt
				}
			}
			if t == nil {
				return nil, errors.New("gateway target not available in this build (use --target relay)")
			}
			t, err := spawned(f, targetGateway, t)
			if err != nil {
				return nil, err
			}
			targets = append(targets, t)
		case targetRelay:
			t, err := spawned(f, targetRelay, bench.RelayTarget{Presence: f.relayPresence})
			if err != nil {
				return nil, err
			}
			targets = append(targets, t)
		case targetURL:
			if f.url == "" {
				return nil, errors.New("--target url needs --url")
			}
			tokens, err := parseTokens(f.tokens)
			if err != nil {
				return nil, err
			}
			targets = append(targets, bench.URLTarget{URL: f.url, Tokens: tokens})
		case "":
			return nil, fmt.Errorf("--target %q: empty target name", names)
		default:
			return nil, fmt.Errorf("unknown target %q (want %s, %s or %s)", name, targetGateway, targetRelay, targetURL)
		}
	}
	if f.url != "" && !slices.Contains(seen, targetURL) {
		return nil, fmt.Errorf("--url given, but --target %q does not include url", names)
	}
	return targets, nil
}

// spawned returns t, or with --spawn the target name run by this executable's `bench serve` in
// a child process, configured as f says.
func spawned(f *benchFlags, name string, t bench.Target) (bench.Target, error) {
	if !f.spawn {
		return t, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("--spawn: %w", err)
	}
	args := []string{exe, "bench", "serve", name, "--audit", f.audit}
	if f.limit {
		args = append(args, "--rate-limit")
	}
	if name == targetGateway && f.nodes > 1 {
		args = append(args, "--nodes", strconv.Itoa(f.nodes))
	}
	if name == targetRelay && f.relayPresence {
		args = append(args, "--relay-presence")
	}
	if f.cpuprofile != "" {
		args = append(args, "--cpuprofile", f.cpuprofile+"."+name)
	}
	return bench.ChildTarget{Label: name, Command: args}, nil
}

// parseTokens parses --token: id=token pairs separated by commas.
func parseTokens(s string) (map[string]string, error) {
	tokens := make(map[string]string)
	if s == "" {
		return tokens, nil
	}
	for entry := range strings.SplitSeq(s, ",") {
		id, tok, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if !ok || id == "" || tok == "" {
			return nil, fmt.Errorf("--token: malformed entry %q, want id=token", entry)
		}
		if _, dup := tokens[id]; dup {
			return nil, fmt.Errorf("--token: %s given twice", id)
		}
		tokens[id] = tok
	}
	return tokens, nil
}

// runTargets runs one workload against each target in turn, reporting progress to stderr.
func runTargets[R any](ctx context.Context, stderr io.Writer, targets []bench.Target,
	run func(context.Context, bench.Target, func(string)) (R, error)) ([]R, error) {
	progress := func(line string) { fmt.Fprintln(stderr, line) }
	results := make([]R, 0, len(targets))
	for _, t := range targets {
		r, err := run(ctx, t, progress)
		if err != nil {
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

// benchReport is the --json output.
type benchReport[O, R any] struct {
	Workload string             `json:"workload"`
	Options  O                  `json:"options"`
	Results  []R                `json:"results"`
	Ratios   map[string]float64 `json:"ratios,omitempty"`  // gateway/relay, when both ran
	Compare  []comparison       `json:"compare,omitempty"` // with --compare-to
}

func writeBenchJSON[O, R any](w io.Writer, workload string, o O, results []R, ratios []ratio, cmp []comparison) error {
	rep := benchReport[O, R]{Workload: workload, Options: o, Results: results, Compare: cmp}
	if len(ratios) > 0 {
		rep.Ratios = make(map[string]float64, len(ratios))
		for _, r := range ratios {
			rep.Ratios[r.key] = r.value
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// ratio is one gateway/relay quotient.
type ratio struct {
	key   string  // JSON name
	label string  // table label
	value float64 // gateway's value / relay's
}

// gatewayRelay finds the gateway's and the relay's results, if both ran.
func gatewayRelay[R any](results []R, name func(R) string) (gw, relay R, ok bool) {
	g := slices.IndexFunc(results, func(r R) bool { return name(r) == targetGateway })
	l := slices.IndexFunc(results, func(r R) bool { return name(r) == targetRelay })
	if g < 0 || l < 0 {
		return gw, relay, false
	}
	return results[g], results[l], true
}

// quotient returns a/b, or 0 when b is 0.
func quotient(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func fanoutRatios(results []bench.FanoutResult) []ratio {
	gw, rl, ok := gatewayRelay(results, func(r bench.FanoutResult) string { return r.Target })
	if !ok {
		return nil
	}
	return []ratio{
		{"deliveries_per_sec", "deliveries/s", quotient(gw.DeliveriesPerSec, rl.DeliveriesPerSec)},
		{"p50", "p50", quotient(float64(gw.P50), float64(rl.P50))},
		{"p99", "p99", quotient(float64(gw.P99), float64(rl.P99))},
		{"cpu_per_delivery", "cpu/delivery", quotient(float64(gw.CPUPerDelivery), float64(rl.CPUPerDelivery))},
	}
}

func rpcRatios(results []bench.RPCResult) []ratio {
	gw, rl, ok := gatewayRelay(results, func(r bench.RPCResult) string { return r.Target })
	if !ok {
		return nil
	}
	return []ratio{
		{"round_trips_per_sec", "round trips/s", quotient(gw.PerSec, rl.PerSec)},
		{"p50", "p50", quotient(float64(gw.P50), float64(rl.P50))},
		{"p99", "p99", quotient(float64(gw.P99), float64(rl.P99))},
		{"cpu_per_round_trip", "cpu/round trip", quotient(float64(gw.CPUPerRoundTrip), float64(rl.CPUPerRoundTrip))},
	}
}

func idleRatios(results []bench.IdleResult) []ratio {
	gw, rl, ok := gatewayRelay(results, func(r bench.IdleResult) string { return r.Target })
	if !ok {
		return nil
	}
	return []ratio{
		{"bytes_per_conn", "bytes/conn", quotient(gw.BytesPerConn, rl.BytesPerConn)},
		{"goroutines_per_conn", "goroutines/conn", quotient(gw.GoroutinesPerConn, rl.GoroutinesPerConn)},
		{"rss_per_conn", "rss/conn", quotient(gw.RSSPerConn, rl.RSSPerConn)},
		{"join_time", "join time", quotient(float64(gw.JoinTime), float64(rl.JoinTime))},
	}
}

func fanoutMetrics(r bench.FanoutResult) (string, []metric) {
	return r.Target, []metric{
		{"deliveries_per_sec", "deliveries/s", r.DeliveriesPerSec, false},
		{"loss", "loss", r.Loss, false},
		{"p50", "p50", float64(r.P50), true},
		{"p99", "p99", float64(r.P99), true},
		{"max", "max", float64(r.Max), true},
		{"cpu_per_delivery", "cpu/delivery", float64(r.CPUPerDelivery), true},
	}
}

func rpcMetrics(r bench.RPCResult) (string, []metric) {
	return r.Target, []metric{
		{"round_trips_per_sec", "round trips/s", r.PerSec, false},
		{"p50", "p50", float64(r.P50), true},
		{"p99", "p99", float64(r.P99), true},
		{"max", "max", float64(r.Max), true},
		{"cpu_per_round_trip", "cpu/round trip", float64(r.CPUPerRoundTrip), true},
	}
}

func idleMetrics(r bench.IdleResult) (string, []metric) {
	return r.Target, []metric{
		{"bytes_per_conn", "bytes/conn", r.BytesPerConn, false},
		{"goroutines_per_conn", "goroutines/conn", r.GoroutinesPerConn, false},
		{"rss_per_conn", "rss/conn", r.RSSPerConn, false},
		{"join_time", "join time", float64(r.JoinTime), true},
		{"audit_bytes_per_join", "audit bytes/join", r.AuditBytesPerJoin, false},
	}
}

// table writes tab-separated rows as aligned columns.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }

// writeRatios writes the ratio line, if there is one.
func writeRatios(w io.Writer, ratios []ratio) error {
	if len(ratios) == 0 {
		return nil
	}
	parts := make([]string, len(ratios))
	for i, r := range ratios {
		parts[i] = fmt.Sprintf("%s: %.2f", r.label, r.value)
	}
	_, err := fmt.Fprintf(w, "%s/%s %s\n", targetGateway, targetRelay, strings.Join(parts, "  "))
	return err
}

// writeNotes writes the first error of each target that had one.
func writeNotes(w io.Writer, notes [][2]string) error {
	for _, n := range notes {
		if n[1] != "" {
			if _, err := fmt.Fprintf(w, "%s: first error: %s\n", n[0], n[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeFanout(w io.Writer, o bench.FanoutOptions, results []bench.FanoutResult) error {
	fmt.Fprintf(w, "fanout: %s, %s, %s envelopes/s, %d-byte texts, %v (+%v warmup)\n",
		plural(o.Participants, "participant"), plural(o.Senders, "sender"), rateText(o.Rate), o.Size, o.Duration, o.Warmup)
	t := newTable(w, "TARGET", "SENT", "EXPECTED", "DELIVERED", "LOSS", "SENT/S", "DELIVERIES/S", "P50", "P90", "P99", "MAX", "CPU/DELIVERY", "ERRORS")
	var notes [][2]string
	for _, r := range results {
		t.row(r.Target, fmt.Sprint(r.Sent), fmt.Sprint(r.Expected), fmt.Sprint(r.Delivered),
			fmt.Sprintf("%.2f%%", 100*r.Loss), fmt.Sprintf("%.0f", r.SendRate), fmt.Sprintf("%.0f", r.DeliveriesPerSec),
			durText(r.P50), durText(r.P90), durText(r.P99), durText(r.Max), durText(r.CPUPerDelivery), fmt.Sprint(r.Errors))
		note := r.FirstError
		if r.OutOfOrder > 0 {
			note = strings.TrimPrefix(note+"; ", "; ") + fmt.Sprintf("%d deliveries out of order", r.OutOfOrder)
		}
		notes = append(notes, [2]string{r.Target, note})
	}
	if err := t.flush(); err != nil {
		return err
	}
	if err := writeNotes(w, notes); err != nil {
		return err
	}
	for _, r := range results {
		if r.Nodes > 1 {
			fmt.Fprintf(w, "%s: %d nodes, deliveries across nodes: p50 %s, p99 %s\n", r.Target, r.Nodes, durText(r.CrossP50), durText(r.CrossP99))
		}
	}
	return writeRatios(w, fanoutRatios(results))
}

func writeRPC(w io.Writer, o bench.RPCOptions, results []bench.RPCResult) error {
	fmt.Fprintf(w, "rpc: %s, %s round trips/s, %d-byte payloads, %v (+%v warmup)\n",
		plural(o.Pairs, "pair"), rateText(o.Rate), o.Size, o.Duration, o.Warmup)
	t := newTable(w, "TARGET", "SENT", "ROUND TRIPS", "ROUND TRIPS/S", "P50", "P90", "P99", "MAX", "CPU/ROUND TRIP", "ERRORS")
	var notes [][2]string
	for _, r := range results {
		t.row(r.Target, fmt.Sprint(r.Sent), fmt.Sprint(r.RoundTrips), fmt.Sprintf("%.0f", r.PerSec),
			durText(r.P50), durText(r.P90), durText(r.P99), durText(r.Max), durText(r.CPUPerRoundTrip), fmt.Sprint(r.Errors))
		notes = append(notes, [2]string{r.Target, r.FirstError})
	}
	if err := t.flush(); err != nil {
		return err
	}
	if err := writeNotes(w, notes); err != nil {
		return err
	}
	return writeRatios(w, rpcRatios(results))
}

func writeIdle(w io.Writer, o bench.IdleOptions, results []bench.IdleResult) error {
	fmt.Fprintf(w, "idle: %s, measured after %v\n", plural(o.Connections, "connection"), o.Settle)
	t := newTable(w, "TARGET", "CONNECTIONS", "JOIN TIME", "BYTES/CONN", "STACKS/CONN", "GOROUTINES/CONN", "RSS/CONN", "AUDIT/JOIN", "ERRORS", "SCOPE")
	var notes [][2]string
	for _, r := range results {
		rss := "-" // only a child's resident set is read
		if r.Scope == bench.ScopeChild {
			rss = fmt.Sprintf("%.0f", r.RSSPerConn)
		}
		audit := "-" // a target without an audit log
		if r.AuditBytesPerJoin != 0 {
			audit = fmt.Sprintf("%.0f", r.AuditBytesPerJoin)
		}
		t.row(r.Target, fmt.Sprint(r.Connections), r.JoinTime.Round(time.Millisecond).String(), fmt.Sprintf("%.0f", r.BytesPerConn),
			fmt.Sprintf("%.0f", r.StackBytesPerConn), fmt.Sprintf("%.2f", r.GoroutinesPerConn), rss, audit, fmt.Sprint(r.Errors), r.Scope)
		notes = append(notes, [2]string{r.Target, r.FirstError})
	}
	if err := t.flush(); err != nil {
		return err
	}
	if err := writeNotes(w, notes); err != nil {
		return err
	}
	return writeRatios(w, idleRatios(results))
}

// plural writes n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// rateText writes a rate option, 0 as "max".
func rateText(rate float64) string {
	if rate == 0 {
		return "max"
	}
	return fmt.Sprintf("%g", rate)
}

// durText rounds a latency to three or so significant digits.
func durText(d time.Duration) string {
	switch {
	case d >= time.Second:
		d = d.Round(time.Millisecond)
	case d >= 10*time.Millisecond:
		d = d.Round(100 * time.Microsecond)
	case d >= time.Millisecond:
		d = d.Round(10 * time.Microsecond)
	default:
		d = d.Round(time.Microsecond)
	}
	return d.String()
}
