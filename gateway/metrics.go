package gateway

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/mew-protocol/mew/gateway/cluster"
	"github.com/mew-protocol/mew/protocol"
)

// metrics are the gateway's Prometheus collectors, registered on the
// server's own registry (never the global one).
type metrics struct {
	reg           *prometheus.Registry
	connections   *prometheus.GaugeVec
	in            map[string]prometheus.Counter // by kind; unknown kinds share "other"
	out           map[string]prometheus.Counter
	refusals      *prometheus.CounterVec
	slowConsumers prometheus.Counter
	pending       prometheus.Gauge
	parked        prometheus.Gauge
	connRefused   *prometheus.CounterVec
	shed          prometheus.Counter
	resumed       prometheus.Counter
	floor         *prometheus.CounterVec
	routing       prometheus.Histogram
	// Registered only on a node of a cluster (registerCluster):
	clusterLag      prometheus.Histogram
	clusterDiverged prometheus.Counter
	historyDropped  prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mew_gateway_connections", Help: "Participants connected, by transport.",
		}, []string{"transport"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mew_gateway_refusals_total", Help: "Envelopes refused, by error code.",
		}, []string{"code"}),
		slowConsumers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mew_gateway_slow_consumers_total", Help: "Connections closed because their outbound queue was full.",
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mew_gateway_unauthenticated_connections", Help: "WebSocket connections waiting for their join message.",
		}),
		parked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mew_gateway_parked_connections", Help: "WebSocket connections idle long enough that no goroutine reads them: the server's poller watches their sockets.",
		}),
		connRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mew_gateway_connections_refused_total",
			Help: "Connections and requests refused by the connection limits: full (over the cap), crowded (plain HTTP within the headroom), unauthenticated (too many waiting to join).",
		}, []string{"reason"}),
		shed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mew_gateway_shed_total",
			Help: "Messages not queued for a recipient because their sender already filled its share of that recipient's queue.",
		}),
		resumed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mew_gateway_resumed_envelopes_total",
			Help: "Envelopes replayed to clients that resumed after a disconnect (the resume query parameter).",
		}),
		floor: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mew_gateway_floor_total",
			Help: "Floor control events: claims, yields, expiries, ignored_yield (an answer sent after a yield).",
		}, []string{"event"}),
		routing: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mew_gateway_routing_seconds",
			Help:    "Time from an envelope's arrival to its being queued for every recipient (decode, checks, enforcement, fan-out).",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10),
		}),
		clusterLag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "mew_gateway_cluster_delivery_seconds",
			Help: "Time from an envelope's publication by another gateway node to its delivery by this one (the publisher's clock against this node's: skewed clocks skew it).",
			// 50 µs to 1.6 s.
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 16),
		}),
		clusterDiverged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mew_gateway_cluster_divergences_total",
			Help: "Times the cluster dropped a space's envelopes for this node (a NATS slow consumer): its participants of that space were closed with 1013.",
		}),
		historyDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mew_gateway_cluster_history_dropped_total",
			Help: "Envelopes this node accepted but did not append to the cluster's polling history: its queue was full, or the append failed.",
		}),
	}
	in := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mew_gateway_envelopes_received_total", Help: "Envelopes accepted from participants, by kind.",
	}, []string{"kind"})
	out := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mew_gateway_envelopes_delivered_total", Help: "Envelopes queued for recipients (one per recipient), by kind.",
	}, []string{"kind"})
	// Kinds come from clients: labels are limited to the known ones so that
	// nobody can grow the metric set.
	kinds := append(append(protocol.Kinds(), protocol.ExtensionKinds()...), "other")
	m.in = make(map[string]prometheus.Counter, len(kinds))
	m.out = make(map[string]prometheus.Counter, len(kinds))
	for _, k := range kinds {
		m.in[k] = in.WithLabelValues(k)
		m.out[k] = out.WithLabelValues(k)
	}
	m.reg.MustRegister(m.connections, m.refusals, m.slowConsumers, m.pending, m.parked, m.connRefused, m.shed, m.resumed, m.floor, m.routing, in, out,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func counterFor(set map[string]prometheus.Counter, kind string) prometheus.Counter {
	if c, ok := set[kind]; ok {
		return c
	}
	return set["other"]
}

func (m *metrics) received(kind string)         { counterFor(m.in, kind).Inc() }
func (m *metrics) delivered(kind string, n int) { counterFor(m.out, kind).Add(float64(n)) }

// registerCluster adds the metrics of a node of a cluster: its connection
// to the fabric, read at each scrape, its counters when it keeps them, the
// cross-node delivery latency and the divergences.
func (m *metrics) registerCluster(node cluster.Node) {
	state := func(want string) func() float64 {
		return func() float64 {
			got := "connected"
			switch err := node.Err(); {
			case err == nil:
			case errors.Is(err, cluster.ErrClosed):
				got = "closed"
			default:
				got = "unavailable"
			}
			if got == want {
				return 1
			}
			return 0
		}
	}
	for _, st := range []string{"connected", "unavailable", "closed"} {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mew_gateway_cluster_connection", Help: "1 for the state of this node's connection to the cluster (NATS): connected, unavailable or closed.",
			ConstLabels: prometheus.Labels{"state": st},
		}, state(st)))
	}
	if sr, ok := node.(cluster.StatsReporter); ok {
		m.reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "mew_gateway_cluster_reconnects_total", Help: "Reconnections of this node to the cluster (NATS).",
			}, func() float64 { return float64(sr.Stats().Reconnects) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "mew_gateway_cluster_slow_consumer_events_total",
				Help: "Times NATS dropped messages for this node because it did not read them fast enough.",
			}, func() float64 { return float64(sr.Stats().SlowConsumers) }),
		)
	}
	m.reg.MustRegister(m.clusterLag, m.clusterDiverged, m.historyDropped)
}
