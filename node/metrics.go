package node

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/gossip"
	"github.com/shoal-db/shoal/slots"
	"go.uber.org/zap"
)

// This file is the HTTP endpoint of metrics-port (issue 9):
//
//   - /metrics: Prometheus text format (/metrics?slots=false: without the
//     per-slot series). Nothing is observed per request
//     beyond the counters the server keeps anyway (INFO commandstats'
//     shards, the latency buckets next to them, the per-slot counters): the
//     collector reads them at scrape time.
//   - /ready: 200 when this node can serve its part of the data: a
//     standalone node at once; a cluster node when the cluster is ok and it
//     is a master serving slots (not one that restarted without its data
//     and waits for a replica to take over, node/datalost.go), or a replica
//     of one with its replication link up and no full sync running.
//     Otherwise 503 with the reason.
//     Kubernetes readiness probes use it.
//   - /live: 200 while the process answers HTTP (liveness).

// metricsShutdownTimeout bounds how long in-flight scrapes may finish.
const metricsShutdownTimeout = 2 * time.Second

// startMetrics serves metrics-port when it is not 0, on the first concrete
// bind address (every address when bind is "*" or absent).
func (s *Server) startMetrics() error {
	port := s.cfg.Int("metrics-port")
	if port == 0 {
		return nil
	}
	host := ""
	for _, b := range s.cfg.Strings("bind") {
		b = strings.TrimPrefix(b, "-")
		if ip := net.ParseIP(b); ip != nil && !ip.IsUnspecified() {
			host = ip.String()
			break
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.FormatInt(port, 10)))
	if err != nil {
		return err
	}
	// Two registries over the same sources: with and without the per-slot
	// series (up to 5 per active slot; /metrics?slots=false leaves them out
	// for scrapers that only want the node's figures).
	handler := func(perSlot bool) http.Handler {
		reg := prometheus.NewRegistry()
		reg.MustRegister(&nodeCollector{srv: s, perSlot: perSlot},
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
			ErrorLog: zap.NewStdLog(s.log.Named("metrics")), MaxRequestsInFlight: 4})
	}
	full, nodeOnly := handler(true), handler(false)
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slots") == "false" {
			nodeOnly.ServeHTTP(w, r)
			return
		}
		full.ServeHTTP(w, r)
	})
	mux.HandleFunc("/ready", s.serveReady)
	mux.HandleFunc("/live", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 30 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("metrics endpoint stopped", zap.Error(err))
		}
	}()
	go func() {
		defer s.wg.Done()
		<-s.stopCron
		ctx, cancel := context.WithTimeout(context.Background(), metricsShutdownTimeout)
		defer cancel()
		_ = hs.Shutdown(ctx)
	}()
	s.log.Info("metrics endpoint listening", zap.String("addr", ln.Addr().String()))
	return nil
}

// readiness reports whether this node serves its part of the data, and if
// not, why.
func (s *Server) readiness() (bool, string) {
	if s.cluster == nil {
		return true, "standalone"
	}
	if s.dataLost.Load() { // node/datalost.go
		return false, "master restarted without its data, waiting for a replica to take over"
	}
	t := s.cluster.Slots().Load()
	if !t.OK {
		return false, "cluster_state is fail"
	}
	shard := t.MyID
	if t.MyMaster != "" {
		shard = t.MyMaster
	}
	for i := 0; i < slots.Count; i++ {
		if n := t.Owner(i); n != nil && n.ID == shard {
			if t.MyMaster == "" {
				return true, "master serving slots"
			}
			// A replica serves its master's slots to READONLY clients
			// once its data is there: link up, no full sync running.
			info := parseInfoFields(s.infoString(infoRequest{sections: map[string]bool{"replication": true}}))
			if st, ok := info["master_link_status"]; ok && st != "up" {
				return false, "replica whose link to its master is " + st
			}
			if info["master_sync_in_progress"] == "1" {
				return false, "replica in a full sync"
			}
			return true, "replica of a master serving slots, link up"
		}
	}
	if t.MyMaster == "" {
		return false, "master without slots"
	}
	return false, "replica of a master without slots"
}

func (s *Server) serveReady(w http.ResponseWriter, _ *http.Request) {
	ok, why := s.readiness()
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write([]byte(why + "\n"))
}

// nodeCollector is the server seen as a prometheus.Collector: every value
// is read at scrape time from counters the server keeps anyway. It is
// unchecked (Describe sends nothing) because the label sets (commands
// called, slots served, replicas) change at run time.
type nodeCollector struct {
	srv     *Server
	perSlot bool // emit the shoal_slot_* series
}

func (*nodeCollector) Describe(chan<- *prometheus.Desc) {}

var (
	descCommandCalls = prometheus.NewDesc("shoal_commands_total",
		"Calls of each command (INFO commandstats calls).", []string{"cmd"}, nil)
	descCommandRejected = prometheus.NewDesc("shoal_commands_rejected_total",
		"Calls refused before execution (arity, auth, routing...).", []string{"cmd"}, nil)
	descCommandFailed = prometheus.NewDesc("shoal_commands_failed_total",
		"Calls that executed and replied with an error.", []string{"cmd"}, nil)
	descCommandLatency = prometheus.NewDesc("shoal_command_duration_seconds",
		"Execution time of each command (power-of-two microsecond buckets).", []string{"cmd"}, nil)
	descDBKeys = prometheus.NewDesc("shoal_db_keys",
		"Keys in each database.", []string{"db"}, nil)
	descDBExpires = prometheus.NewDesc("shoal_db_keys_expiring",
		"Keys with a time to live in each database.", []string{"db"}, nil)
	descMemUsed = prometheus.NewDesc("shoal_memory_used_bytes",
		"Heap bytes in live objects (INFO used_memory).", nil, nil)
	descMemRSS = prometheus.NewDesc("shoal_memory_rss_bytes",
		"Resident set size of the process (INFO used_memory_rss).", nil, nil)
	descMemMax = prometheus.NewDesc("shoal_memory_max_bytes",
		"The maxmemory directive (0 = no limit).", nil, nil)
	descClients = prometheus.NewDesc("shoal_connected_clients",
		"Connected clients, replicas not counted (INFO connected_clients).", nil, nil)
	descBlocked = prometheus.NewDesc("shoal_blocked_clients",
		"Clients blocked in a blocking command.", nil, nil)
	descConnsTotal = prometheus.NewDesc("shoal_connections_received_total",
		"Connections accepted.", nil, nil)
	descProcessed = prometheus.NewDesc("shoal_commands_processed_total",
		"Commands processed (INFO total_commands_processed).", nil, nil)
	descNetIn = prometheus.NewDesc("shoal_net_input_bytes_total",
		"Bytes read from clients.", nil, nil)
	descNetOut = prometheus.NewDesc("shoal_net_output_bytes_total",
		"Bytes written to clients.", nil, nil)
	descHits    = prometheus.NewDesc("shoal_keyspace_hits_total", "Key lookups that found the key.", nil, nil)
	descMiss    = prometheus.NewDesc("shoal_keyspace_misses_total", "Key lookups that did not.", nil, nil)
	descExpired = prometheus.NewDesc("shoal_expired_keys_total", "Keys deleted because their TTL passed.", nil, nil)
	descUptime  = prometheus.NewDesc("shoal_uptime_seconds", "Seconds since the server started.", nil, nil)

	descClusterEnabled = prometheus.NewDesc("shoal_cluster_enabled", "1 in cluster mode.", nil, nil)
	descClusterState   = prometheus.NewDesc("shoal_cluster_state_ok",
		"1 when CLUSTER INFO says cluster_state:ok.", nil, nil)
	descClusterSlots = prometheus.NewDesc("shoal_cluster_slots",
		"Slots by state, as CLUSTER INFO counts them (assigned, ok, pfail, fail).", []string{"state"}, nil)
	descClusterKnown = prometheus.NewDesc("shoal_cluster_known_nodes", "Nodes this node knows.", nil, nil)
	descClusterSize  = prometheus.NewDesc("shoal_cluster_size", "Masters serving at least one slot.", nil, nil)
	descClusterFlag  = prometheus.NewDesc("shoal_cluster_nodes_flagged",
		"Known nodes flagged PFAIL (this node's suspicion) or FAIL (agreed).", []string{"flag"}, nil)
	descCurrentEpoch = prometheus.NewDesc("shoal_cluster_current_epoch", "The cluster's currentEpoch.", nil, nil)
	descConfigEpoch  = prometheus.NewDesc("shoal_cluster_config_epoch",
		"This node's configEpoch (its master's for a replica).", nil, nil)
	descMyRole  = prometheus.NewDesc("shoal_cluster_myself_master", "1 when this node is a master.", nil, nil)
	descMySlots = prometheus.NewDesc("shoal_cluster_myself_slots",
		"Slots this node serves (its master's for a replica).", nil, nil)
	descBusBytes = prometheus.NewDesc("shoal_cluster_bus_bytes_total",
		"Cluster bus traffic.", []string{"direction"}, nil)
	descBusRejected = prometheus.NewDesc("shoal_cluster_bus_rejected_total",
		"Cluster bus packets and stream messages dropped as malformed or oversized before memberlist parsed them.", nil, nil)
	descReady = prometheus.NewDesc("shoal_ready", "1 when /ready answers 200.", nil, nil)

	descSlotKeys  = prometheus.NewDesc("shoal_slot_keys", "Keys in each non-empty slot of this shard.", []string{"slot"}, nil)
	descSlotCalls = prometheus.NewDesc("shoal_slot_commands_total",
		"Single-slot commands executed on each slot.", []string{"slot"}, nil)
	descSlotCPU = prometheus.NewDesc("shoal_slot_cpu_seconds_total",
		"Execution time per slot (cluster-slot-stats-enabled yes).", []string{"slot"}, nil)
	descSlotNet = prometheus.NewDesc("shoal_slot_network_bytes_total",
		"Request and reply bytes per slot (cluster-slot-stats-enabled yes).", []string{"slot", "direction"}, nil)

	descReplMaster = prometheus.NewDesc("shoal_replication_master",
		"1 when INFO replication says role:master.", nil, nil)
	descReplConnected = prometheus.NewDesc("shoal_replication_connected_replicas",
		"INFO replication connected_slaves.", nil, nil)
	descReplOffset = prometheus.NewDesc("shoal_replication_offset_bytes",
		"INFO replication master_repl_offset (this node's replication stream position).", nil, nil)
	descReplReplicaOffset = prometheus.NewDesc("shoal_replication_replica_offset_bytes",
		"Each replica's acknowledged offset (INFO replication slaveN).", []string{"replica"}, nil)
	descReplReplicaLag = prometheus.NewDesc("shoal_replication_replica_lag_bytes",
		"master_repl_offset minus each replica's acknowledged offset.", []string{"replica"}, nil)
	descReplReplicaLagSec = prometheus.NewDesc("shoal_replication_replica_lag_seconds",
		"Seconds since each replica's last acknowledgement (INFO replication slaveN lag).", []string{"replica"}, nil)
	descReplLinkUp = prometheus.NewDesc("shoal_replication_master_link_up",
		"On a replica: 1 when master_link_status is up.", nil, nil)
	descReplLastIO = prometheus.NewDesc("shoal_replication_master_last_io_seconds",
		"On a replica: master_last_io_seconds_ago.", nil, nil)
)

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func counter(ch chan<- prometheus.Metric, d *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
}

// Collect reads everything at scrape time. Safe for concurrent use: every
// source is atomic or takes its own lock briefly.
func (nc *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	s := nc.srv
	s.collectCommands(ch)
	s.collectServer(ch)
	s.collectReplication(ch)
	gauge(ch, descClusterEnabled, float64(boolInt(s.cluster != nil)))
	ready, _ := s.readiness()
	gauge(ch, descReady, float64(boolInt(ready)))
	if s.cluster != nil {
		s.collectCluster(ch)
		if nc.perSlot {
			s.collectSlots(ch)
		}
	}
}

func (s *Server) collectCommands(ch chan<- prometheus.Metric) {
	emit := func(spec *command.Spec) {
		cc := s.table.counters(spec)
		if cc.Calls == 0 && cc.Rejected == 0 && cc.Failed == 0 {
			return
		}
		name := spec.FullName()
		counter(ch, descCommandCalls, float64(cc.Calls), name)
		counter(ch, descCommandRejected, float64(cc.Rejected), name)
		counter(ch, descCommandFailed, float64(cc.Failed), name)
		cum, total := s.table.latencyHistogram(spec)
		buckets := make(map[float64]uint64, len(cum))
		for i, n := range cum {
			buckets[latencyUpperBound(i)] = n
		}
		ch <- prometheus.MustNewConstHistogram(descCommandLatency, total, float64(cc.Usec)/1e6, buckets, name)
	}
	for _, spec := range s.table.all {
		emit(spec)
		for _, sub := range spec.Subcommands {
			if sub.Handler != nil {
				emit(sub)
			}
		}
	}
}

func (s *Server) collectServer(ch chan<- prometheus.Metric) {
	dbs, hits, misses := s.ks.Stats()
	for _, db := range dbs {
		gauge(ch, descDBKeys, float64(db.Keys), strconv.Itoa(db.ID))
		gauge(ch, descDBExpires, float64(db.Expires), strconv.Itoa(db.ID))
	}
	counter(ch, descHits, float64(hits))
	counter(ch, descMiss, float64(misses))
	counter(ch, descExpired, float64(s.ks.ExpiredKeys()))
	m := readMemoryFigures()
	gauge(ch, descMemUsed, float64(m.used))
	gauge(ch, descMemRSS, float64(m.rss))
	gauge(ch, descMemMax, float64(s.cfg.Uint("maxmemory")))
	connected, blocked, _ := s.clientCounts()
	gauge(ch, descClients, float64(connected))
	gauge(ch, descBlocked, float64(blocked))
	counter(ch, descConnsTotal, float64(s.stats.connectionsReceived.Load()))
	cmds, in, out := s.trafficTotals()
	counter(ch, descProcessed, float64(cmds))
	counter(ch, descNetIn, float64(in))
	counter(ch, descNetOut, float64(out))
	gauge(ch, descUptime, time.Since(s.start).Seconds())
}

func (s *Server) collectCluster(ch chan<- prometheus.Metric) {
	info := parseInfoFields(s.cluster.InfoText())
	gauge(ch, descClusterState, float64(boolInt(info["cluster_state"] == "ok")))
	for _, st := range []string{"assigned", "ok", "pfail", "fail"} {
		if v, err := strconv.ParseFloat(info["cluster_slots_"+st], 64); err == nil {
			gauge(ch, descClusterSlots, v, st)
		}
	}
	if v, err := strconv.ParseFloat(info["cluster_size"], 64); err == nil {
		gauge(ch, descClusterSize, v)
	}
	nodes := s.cluster.Nodes()
	gauge(ch, descClusterKnown, float64(len(nodes)))
	var pfail, fail int
	for _, n := range nodes {
		if n.Flags&gossip.FlagPFail != 0 {
			pfail++
		}
		if n.Flags&gossip.FlagFail != 0 {
			fail++
		}
	}
	gauge(ch, descClusterFlag, float64(pfail), "pfail")
	gauge(ch, descClusterFlag, float64(fail), "fail")
	current, _ := s.cluster.Epochs()
	gauge(ch, descCurrentEpoch, float64(current))
	me := s.cluster.Myself()
	gauge(ch, descConfigEpoch, float64(me.Epoch))
	gauge(ch, descMyRole, float64(boolInt(me.Master == "")))
	_, served := s.myShardSlots()
	gauge(ch, descMySlots, float64(served))
	sent, recv, _ := s.cluster.Traffic()
	counter(ch, descBusBytes, float64(sent), "out")
	counter(ch, descBusBytes, float64(recv), "in")
	counter(ch, descBusRejected, float64(s.cluster.Rejected()))
}

// collectSlots emits the slots of this shard that hold keys or saw
// commands (at most 16384 series; an idle, empty slot has none).
func (s *Server) collectSlots(ch chan<- prometheus.Metric) {
	owned, _ := s.myShardSlots()
	st := s.slotStats
	enabled := st.enabled()
	for i := 0; i < slots.Count; i++ {
		keys := s.countKeysInSlot(i)
		sc := st.counters(i)
		calls := sc.calls.Load()
		if keys == 0 && calls == 0 {
			continue
		}
		label := strconv.Itoa(i)
		if owned[i] || keys > 0 {
			gauge(ch, descSlotKeys, float64(keys), label)
		}
		counter(ch, descSlotCalls, float64(calls), label)
		if enabled {
			counter(ch, descSlotCPU, float64(sc.cpuUsec.Load())/1e6, label)
			counter(ch, descSlotNet, float64(sc.netIn.Load()), label, "in")
			counter(ch, descSlotNet, float64(sc.netOut.Load()), label, "out")
		}
	}
}

// collectReplication exposes what INFO replication reports (read through
// its text, so that the figures follow whatever the replication layer
// fills in).
func (s *Server) collectReplication(ch chan<- prometheus.Metric) {
	info := parseInfoFields(s.infoString(infoRequest{sections: map[string]bool{"replication": true}}))
	gauge(ch, descReplMaster, float64(boolInt(info["role"] == "master")))
	offset, _ := strconv.ParseFloat(info["master_repl_offset"], 64)
	gauge(ch, descReplOffset, offset)
	if v, err := strconv.ParseFloat(info["connected_slaves"], 64); err == nil {
		gauge(ch, descReplConnected, v)
	}
	if st, ok := info["master_link_status"]; ok {
		gauge(ch, descReplLinkUp, float64(boolInt(st == "up")))
	}
	if v, err := strconv.ParseFloat(info["master_last_io_seconds_ago"], 64); err == nil {
		gauge(ch, descReplLastIO, v)
	}
	for k, v := range info {
		if !strings.HasPrefix(k, "slave") {
			continue
		}
		if _, err := strconv.Atoi(k[len("slave"):]); err != nil {
			continue
		}
		f := map[string]string{}
		for _, kv := range strings.Split(v, ",") {
			if key, val, ok := strings.Cut(kv, "="); ok {
				f[key] = val
			}
		}
		replica := net.JoinHostPort(f["ip"], f["port"])
		if off, err := strconv.ParseFloat(f["offset"], 64); err == nil {
			gauge(ch, descReplReplicaOffset, off, replica)
			gauge(ch, descReplReplicaLag, max(offset-off, 0), replica)
		}
		if lag, err := strconv.ParseFloat(f["lag"], 64); err == nil {
			gauge(ch, descReplReplicaLagSec, lag, replica)
		}
	}
}

// parseInfoFields reads "name:value" lines (INFO, CLUSTER INFO).
func parseInfoFields(text string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}
