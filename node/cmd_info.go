package node

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/internal/buildinfo"
)

// INFO: Redis 7.0.15's sections, field names and field order, with shoal's
// real figures. Fields of subsystems shoal does not have (Lua, AOF, RDB,
// replicas, defragmentation, tracking) report the values of an idle Redis
// that has none of them. shoal's own fields are prefixed "shoal_".

func infoHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"info": cmdInfo,
	}
}

func cmdInfo(c *Client, args [][]byte) {
	req := parseInfoSections(args[1:])
	c.Verbatim(c.srv.infoString(req), "txt")
}

// infoRequest is the set of sections an INFO call asked for.
type infoRequest struct {
	all      bool // "all" or "everything": every section
	sections map[string]bool
}

// defaultInfoSections are the sections of INFO and INFO default, in Redis's
// order (commandstats and latencystats are only in all/everything or when
// asked for by name).
var defaultInfoSections = []string{"server", "clients", "memory", "persistence", "stats",
	"replication", "cpu", "module_list", "errorstats", "cluster", "keyspace"}

// parseInfoSections mirrors genInfoSectionDict: names are case-insensitive,
// "default" adds the default sections, "all" and "everything" select all.
func parseInfoSections(args [][]byte) infoRequest {
	req := infoRequest{sections: map[string]bool{}}
	if len(args) == 0 {
		for _, s := range defaultInfoSections {
			req.sections[s] = true
		}
		return req
	}
	for _, a := range args {
		name := strings.ToLower(string(a))
		switch name {
		case "default":
			for _, s := range defaultInfoSections {
				req.sections[s] = true
			}
		case "all", "everything":
			req.all = true
		default:
			req.sections[name] = true
		}
	}
	return req
}

func (r infoRequest) wants(name string) bool { return r.all || r.sections[name] }

// infoWriter builds the INFO text: "# Section" headers, "name:value" lines,
// CRLF line ends and an empty line between sections.
type infoWriter struct {
	b        strings.Builder
	sections int
}

func (w *infoWriter) section(title string) {
	if w.sections > 0 {
		w.b.WriteString("\r\n")
	}
	w.sections++
	w.b.WriteString("# ")
	w.b.WriteString(title)
	w.b.WriteString("\r\n")
}

func (w *infoWriter) str(name, value string) {
	w.b.WriteString(name)
	w.b.WriteByte(':')
	w.b.WriteString(value)
	w.b.WriteString("\r\n")
}

func (w *infoWriter) int(name string, v int64) { w.str(name, strconv.FormatInt(v, 10)) }

func (w *infoWriter) float2(name string, v float64) { w.str(name, strconv.FormatFloat(v, 'f', 2, 64)) }

// infoString renders the requested sections.
func (s *Server) infoString(req infoRequest) string {
	w := &infoWriter{}
	if req.wants("server") {
		s.infoServer(w)
	}
	if req.wants("clients") {
		s.infoClients(w)
	}
	if req.wants("memory") {
		s.infoMemory(w)
	}
	if req.wants("persistence") {
		s.infoPersistence(w)
	}
	if req.wants("stats") {
		s.infoStats(w)
	}
	if req.wants("replication") {
		s.infoReplication(w)
	}
	if req.wants("cpu") {
		infoCPU(w)
	}
	if req.wants("module_list") || req.wants("modules") {
		w.section("Modules")
	}
	if req.wants("commandstats") {
		s.infoCommandStats(w)
	}
	if req.wants("errorstats") {
		w.section("Errorstats")
		for _, e := range s.stats.errorCounts() {
			w.str("errorstat_"+safeInfoString(e.Code), "count="+itoa(e.Count))
		}
	}
	if req.wants("latencystats") {
		s.infoLatencyStats(w) // node/metrics_hist.go
	}
	if req.wants("cluster") {
		w.section("Cluster")
		w.int("cluster_enabled", boolInt(s.cfg.Bool("cluster-enabled")))
	}
	if req.wants("keyspace") {
		w.section("Keyspace")
		dbs, _, _ := s.ks.Stats()
		for _, db := range dbs {
			w.str("db"+strconv.Itoa(db.ID), fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", db.Keys, db.Expires))
		}
	}
	return w.b.String()
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// safeInfoString replaces the characters that would break INFO's format
// (getSafeInfoString).
func safeInfoString(s string) string {
	if !strings.ContainsAny(s, "#:\r\n") {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '#', ':', '\r', '\n':
			return '_'
		}
		return r
	}, s)
}

func (s *Server) infoServer(w *infoWriter) {
	now := time.Now()
	uptime := int64(now.Sub(s.start) / time.Second)
	w.section("Server")
	w.str("redis_version", Version)
	build := buildinfo.Get()
	w.str("redis_git_sha1", build.GitSHA1)
	w.int("redis_git_dirty", int64(build.DirtyFlag()))
	w.str("redis_build_id", build.BuildID)
	w.str("redis_mode", s.mode())
	w.str("os", osDescription())
	w.int("arch_bits", strconv.IntSize)
	w.str("monotonic_clock", "POSIX clock_gettime")
	w.str("multiplexing_api", multiplexingAPI())
	w.str("atomicvar_api", "sync-atomic")
	w.str("gcc_version", "0.0.0")
	w.int("process_id", int64(s.pid))
	w.str("process_supervised", "no")
	w.str("run_id", s.runID)
	w.int("tcp_port", s.listeningPort())
	w.int("server_time_usec", now.UnixMicro())
	w.int("uptime_in_seconds", uptime)
	w.int("uptime_in_days", uptime/(3600*24))
	w.int("hz", s.cronHz.Load())
	w.int("configured_hz", s.cfg.Int("hz"))
	w.int("lru_clock", (now.Unix())&(1<<24-1))
	exe, _ := os.Executable()
	w.str("executable", exe)
	w.str("config_file", s.cfg.ConfigFile())
	w.int("io_threads_active", 0)
	if left, ok := s.shutdownLeft(now); ok {
		w.int("shutdown_in_milliseconds", left.Milliseconds())
	}
	w.str("shoal_version", buildinfo.Version)
	w.str("shoal_go_version", runtime.Version())
}

// listeningPort is the TCP port clients connect to: the configured one, or
// the one the system chose for "port 0".
func (s *Server) listeningPort() int64 {
	if p := s.cfg.Int("port"); p != 0 {
		return p
	}
	if a := s.Addr(); a != nil {
		if _, port, err := splitHostPort(a.String()); err == nil {
			return port
		}
	}
	return 0
}

func splitHostPort(addr string) (string, int64, error) {
	i := strings.LastIndexByte(addr, ':')
	if i < 0 {
		return "", 0, fmt.Errorf("no port in %q", addr)
	}
	p, err := strconv.ParseInt(addr[i+1:], 10, 64)
	return addr[:i], p, err
}

// osDescription is uname's "sysname release machine", as Redis prints it.
var osDescription = sync.OnceValue(func() string {
	sys, rel := runtime.GOOS, ""
	if b, err := os.ReadFile("/proc/sys/kernel/ostype"); err == nil {
		sys = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		rel = strings.TrimSpace(string(b))
	}
	machine := runtime.GOARCH
	switch machine {
	case "amd64":
		machine = "x86_64"
	case "arm64":
		machine = "aarch64"
	case "386":
		machine = "i686"
	}
	return sys + " " + rel + " " + machine
})

func multiplexingAPI() string {
	switch runtime.GOOS {
	case "linux":
		return "epoll"
	case "darwin", "freebsd", "netbsd", "openbsd", "dragonfly":
		return "kqueue"
	case "solaris", "illumos":
		return "evport"
	}
	return "select"
}

// clientCounts is what INFO clients and the metrics endpoint report:
// connected clients as Redis counts them (replicas are not clients there),
// blocked clients and the largest query buffer.
func (s *Server) clientCounts() (connected, blocked, maxQbuf int64) {
	for _, cl := range s.Clients() {
		if cl.killed.Load() {
			continue
		}
		if cl.kind() != clientReplica {
			connected++
		}
		if cl.blocked.Load() {
			blocked++
		}
		maxQbuf = max(maxQbuf, cl.guard.QueryBuffered())
	}
	return connected, blocked, maxQbuf
}

func (s *Server) infoClients(w *infoWriter) {
	connected, blocked, maxQbuf := s.clientCounts()
	w.section("Clients")
	w.int("connected_clients", connected)
	w.int("cluster_connections", 0)
	w.int("maxclients", s.cfg.Int("maxclients"))
	w.int("client_recent_max_input_buffer", maxQbuf)
	w.int("client_recent_max_output_buffer", s.recentMaxOutput())
	w.int("blocked_clients", blocked)
	w.int("tracking_clients", int64(s.tracking.clients.Load()))
	w.int("clients_in_timeout_table", 0)
}

// bytesToHuman formats a byte count as Redis does (100B, 1.50K, 2.00M...).
func bytesToHuman(n uint64) string {
	const k = 1024
	switch {
	case n < k:
		return strconv.FormatUint(n, 10) + "B"
	case n < k*k:
		return fmt.Sprintf("%.2fK", float64(n)/k)
	case n < k*k*k:
		return fmt.Sprintf("%.2fM", float64(n)/(k*k))
	case n < k*k*k*k:
		return fmt.Sprintf("%.2fG", float64(n)/(k*k*k))
	case n < k*k*k*k*k:
		return fmt.Sprintf("%.2fT", float64(n)/(k*k*k*k))
	case n < k*k*k*k*k*k:
		return fmt.Sprintf("%.2fP", float64(n)/(k*k*k*k*k))
	}
	return strconv.FormatUint(n, 10) + "B"
}

// memoryFigures are the process's memory figures in Redis's terms: the Go
// heap's live objects stand for what zmalloc counts as allocated.
type memoryFigures struct {
	used      uint64 // bytes in heap objects (used_memory)
	active    uint64 // heap spans in use (allocator_active)
	resident  uint64 // memory the runtime has mapped and not released (allocator_resident)
	rss       uint64 // resident set size of the process
	goroutine uint64 // goroutine stacks
}

var memorySampleNames = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
	"/memory/classes/heap/stacks:bytes",
}

func readMemoryFigures() memoryFigures {
	samples := make([]metrics.Sample, len(memorySampleNames))
	for i, n := range memorySampleNames {
		samples[i].Name = n
	}
	metrics.Read(samples)
	val := func(i int) uint64 {
		if samples[i].Value.Kind() == metrics.KindUint64 {
			return samples[i].Value.Uint64()
		}
		return 0
	}
	m := memoryFigures{
		used:      val(0),
		active:    val(0) + val(1),
		resident:  val(2) - min(val(2), val(3)),
		goroutine: val(4),
	}
	m.rss = processRSS()
	if m.rss == 0 {
		m.rss = m.resident
	}
	return m
}

// processRSS reads the resident set size from /proc/self/statm (0 where
// there is no procfs).
func processRSS() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * uint64(os.Getpagesize())
}

// totalSystemMemory reads MemTotal from /proc/meminfo (0 if unknown).
var totalSystemMemory = sync.OnceValue(func() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseUint(fields[1], 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
})

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// memoryReport is used_memory and its parts (node/maxmemory.go) with the
// Go runtime's real figures beside them, for INFO memory and MEMORY.
type memoryReport struct {
	used, peak, startup, dataset   int64
	clientsNormal, clientsReplicas int64
	backlog                        int64
	heap                           memoryFigures // the Go runtime's view
}

func (s *Server) memoryReport() memoryReport {
	m := memoryReport{
		startup: int64(s.aux().startupMemory),
		dataset: s.ks.DataBytes(),
		backlog: s.mem.backlog.Load(),
		heap:    readMemoryFigures(),
	}
	m.clientsNormal, m.clientsReplicas = s.clientsMemory() // node/client_evict.go
	// The replicas' queued stream, fresh (the hot path reads the cron's).
	streams := s.repl.m.LinksPending()
	s.mem.replicaStreams.Store(streams)
	m.clientsReplicas += streams
	m.used = s.usedMemory() // with the fresh figure of the replicas' streams stored above
	m.peak = int64(s.aux().notePeak(uint64(m.used)))
	return m
}

// overhead is used_memory_overhead: everything but the dataset.
func (m memoryReport) overhead() int64 { return m.used - m.dataset }

// datasetPercent is the dataset's share of what was used since start-up.
func (m memoryReport) datasetPercent() float64 {
	if m.used <= m.startup {
		return 0
	}
	return float64(m.dataset) * 100 / float64(m.used-m.startup)
}

func (s *Server) infoMemory(w *infoWriter) {
	m := s.memoryReport()
	used, peak := uint64(m.used), uint64(m.peak)
	h := m.heap
	maxmem := s.cfg.Uint("maxmemory")
	total := totalSystemMemory()
	w.section("Memory")
	w.int("used_memory", m.used)
	w.str("used_memory_human", bytesToHuman(used))
	w.int("used_memory_rss", int64(h.rss))
	w.str("used_memory_rss_human", bytesToHuman(h.rss))
	w.int("used_memory_peak", m.peak)
	w.str("used_memory_peak_human", bytesToHuman(peak))
	w.str("used_memory_peak_perc", strconv.FormatFloat(ratio(used, peak)*100, 'f', 2, 64)+"%")
	w.int("used_memory_overhead", m.overhead())
	w.int("used_memory_startup", m.startup)
	w.int("used_memory_dataset", m.dataset)
	w.str("used_memory_dataset_perc", strconv.FormatFloat(m.datasetPercent(), 'f', 2, 64)+"%")
	w.int("allocator_allocated", int64(h.used))
	w.int("allocator_active", int64(h.active))
	w.int("allocator_resident", int64(h.resident))
	w.int("total_system_memory", int64(total))
	w.str("total_system_memory_human", bytesToHuman(total))
	w.int("used_memory_lua", 0)
	w.int("used_memory_vm_eval", 0)
	w.str("used_memory_lua_human", "0B")
	w.int("used_memory_scripts_eval", 0)
	scripts, libs, funcs := s.scriptCounts() // node/script.go
	w.int("number_of_cached_scripts", int64(scripts))
	w.int("number_of_functions", int64(funcs))
	w.int("number_of_libraries", int64(libs))
	w.int("used_memory_vm_functions", 0)
	w.int("used_memory_vm_total", 0)
	w.str("used_memory_vm_total_human", "0B")
	w.int("used_memory_functions", 0)
	w.int("used_memory_scripts", 0)
	w.str("used_memory_scripts_human", "0B")
	w.int("maxmemory", int64(maxmem))
	w.str("maxmemory_human", bytesToHuman(maxmem))
	w.str("maxmemory_policy", s.cfg.String("maxmemory-policy"))
	w.float2("allocator_frag_ratio", ratio(h.active, h.used))
	w.int("allocator_frag_bytes", int64(h.active-min(h.active, h.used)))
	w.float2("allocator_rss_ratio", ratio(h.resident, h.active))
	w.int("allocator_rss_bytes", int64(h.resident)-int64(h.active))
	w.float2("rss_overhead_ratio", ratio(h.rss, h.resident))
	w.int("rss_overhead_bytes", int64(h.rss)-int64(h.resident))
	w.float2("mem_fragmentation_ratio", ratio(h.rss, used))
	w.int("mem_fragmentation_bytes", int64(h.rss)-m.used)
	w.int("mem_not_counted_for_evict", m.clientsReplicas)
	w.int("mem_replication_backlog", m.backlog)
	w.int("mem_total_replication_buffers", m.backlog+m.clientsReplicas)
	w.int("mem_clients_slaves", m.clientsReplicas)
	w.int("mem_clients_normal", m.clientsNormal)
	w.int("mem_cluster_links", 0)
	w.int("mem_aof_buffer", s.aof.bufferLength()) // node/aof.go
	w.str("mem_allocator", "go")
	w.int("active_defrag_running", 0)
	w.int("lazyfree_pending_objects", 0)
	w.int("lazyfreed_objects", 0)
}

func (s *Server) infoPersistence(w *infoWriter) {
	w.section("Persistence")
	w.int("loading", boolInt(s.loading.active.Load()))
	w.int("async_loading", boolInt(s.repl.asyncLoading()))
	w.int("current_cow_peak", 0)
	w.int("current_cow_size", 0)
	w.int("current_cow_size_age", 0)
	w.str("current_fork_perc", "0.00")
	w.int("current_save_keys_processed", 0)
	w.int("current_save_keys_total", 0)
	st := &s.rdbSave
	w.int("rdb_changes_since_last_save", s.changesSinceSave())
	// A full sync's snapshot counts, as Redis's replication BGSAVE child.
	w.int("rdb_bgsave_in_progress", boolInt(st.bgRunning.Load() || s.repl.syncer.running.Load()))
	w.int("rdb_last_save_time", s.lastSaveTime())
	w.str("rdb_last_bgsave_status", map[bool]string{false: "ok", true: "err"}[st.lastFailed.Load()])
	w.int("rdb_last_bgsave_time_sec", st.lastBgDuration.Load())
	current := int64(-1)
	if start := st.bgStart.Load(); st.bgRunning.Load() && start != 0 {
		current = time.Now().Unix() - start
	}
	w.int("rdb_current_bgsave_time_sec", current)
	w.int("rdb_saves", st.statSaves.Load())
	w.int("rdb_last_cow_size", 0) // no fork, no copy-on-write
	w.int("rdb_last_load_keys_expired", st.loadedExpired.Load())
	w.int("rdb_last_load_keys_loaded", st.loadedKeys.Load())
	s.infoAOF(w)     // node/aof.go
	s.infoLoading(w) // node/loading.go
}

func (s *Server) infoStats(w *infoWriter) {
	st := &s.stats
	ops, inKbps, outKbps := s.aux().instantaneous(s)
	_, hits, misses := s.ks.Stats()
	w.section("Stats")
	w.int("total_connections_received", st.connectionsReceived.Load())
	commands, netIn, netOut := s.trafficTotals()
	w.int("total_commands_processed", commands)
	w.int("instantaneous_ops_per_sec", ops)
	w.int("total_net_input_bytes", netIn)
	w.int("total_net_output_bytes", netOut)
	w.int("total_net_repl_input_bytes", s.repl.rep.BytesIn()) // replication.Replica
	w.int("total_net_repl_output_bytes", s.repl.m.BytesOut()) // replication.Master
	w.float2("instantaneous_input_kbps", inKbps)
	w.float2("instantaneous_output_kbps", outKbps)
	w.str("instantaneous_input_repl_kbps", "0.00")
	w.str("instantaneous_output_repl_kbps", "0.00")
	w.int("rejected_connections", st.rejectedConns.Load())
	w.int("sync_full", s.repl.syncFull.Load())
	w.int("sync_partial_ok", s.repl.syncPartialOK.Load())
	w.int("sync_partial_err", s.repl.syncPartialErr.Load())
	w.int("expired_keys", s.ks.ExpiredKeys())
	w.float2("expired_stale_perc", float64(s.ks.ExpiredStalePercent()))
	w.int("expired_time_cap_reached_count", 0)
	w.int("expire_cycle_cpu_milliseconds", 0)
	w.int("evicted_keys", s.ks.EvictedKeys())
	w.int("evicted_clients", s.cevict.evicted.Load())
	exceededTotal, exceededNow := s.evictionExceededMillis()
	w.int("total_eviction_exceeded_time", exceededTotal)
	w.int("current_eviction_exceeded_time", exceededNow)
	w.int("keyspace_hits", hits)
	w.int("keyspace_misses", misses)
	psChannels, psPatterns, psShard := s.pubsubCounts() // node/pubsub.go
	w.int("pubsub_channels", psChannels)
	w.int("pubsub_patterns", psPatterns)
	w.int("pubsubshard_channels", psShard)
	w.int("latest_fork_usec", 0)
	w.int("total_forks", 0)
	w.int("migrate_cached_sockets", int64(s.migrateConns.Size()))
	w.int("slave_expires_tracked_keys", int64(s.ks.ReplicaKeysWithExpire()))
	w.int("active_defrag_hits", 0)
	w.int("active_defrag_misses", 0)
	w.int("active_defrag_key_hits", 0)
	w.int("active_defrag_key_misses", 0)
	w.int("total_active_defrag_time", 0)
	w.int("current_active_defrag_time", 0)
	tkeys, titems, tprefixes := s.trackingCounts() // node/tracking.go
	w.int("tracking_total_keys", tkeys)
	w.int("tracking_total_items", titems)
	w.int("tracking_total_prefixes", tprefixes)
	w.int("unexpected_error_replies", st.unexpectedErrors.Load())
	w.int("total_error_replies", st.totalErrorReplies.Load())
	w.int("dump_payload_sanitizations", 0)
	w.int("total_reads_processed", 0)
	w.int("total_writes_processed", 0)
	w.int("io_threaded_reads_processed", 0)
	w.int("io_threaded_writes_processed", 0)
	w.int("reply_buffer_shrinks", 0)
	w.int("reply_buffer_expands", 0)
	// Denials counted as Redis 7.2 does (7.0.15 has no such fields).
	w.int("acl_access_denied_auth", s.acl.Log.DeniedAuth.Load())
	w.int("acl_access_denied_cmd", s.acl.Log.DeniedCmd.Load())
	w.int("acl_access_denied_key", s.acl.Log.DeniedKey.Load())
	w.int("acl_access_denied_channel", s.acl.Log.DeniedChannel.Load())
	w.int("shoal_command_panics", st.panics.Load())
}

func infoCPU(w *infoWriter) {
	self, children, thread := cpuUsage()
	w.section("CPU")
	w.str("used_cpu_sys", self.sys)
	w.str("used_cpu_user", self.user)
	w.str("used_cpu_sys_children", children.sys)
	w.str("used_cpu_user_children", children.user)
	if thread != nil {
		w.str("used_cpu_sys_main_thread", thread.sys)
		w.str("used_cpu_user_main_thread", thread.user)
	}
}

// cpuTimes are rusage times formatted as Redis prints them ("%ld.%06ld").
type cpuTimes struct{ sys, user string }

func formatCPUTime(sec, usec int64) string { return fmt.Sprintf("%d.%06d", sec, usec) }

// infoCommandStats lists every command (and subcommand) that was called,
// failed or was rejected, in name order.
func (s *Server) infoCommandStats(w *infoWriter) {
	w.section("Commandstats")
	names := make([]string, 0, len(s.table.byName))
	for name := range s.table.byName {
		names = append(names, name)
	}
	slices.Sort(names)
	line := func(spec *command.Spec) {
		cc := s.table.counters(spec)
		if cc.Calls == 0 && cc.Failed == 0 && cc.Rejected == 0 {
			return
		}
		perCall := 0.0
		if cc.Calls > 0 {
			perCall = float64(cc.Usec) / float64(cc.Calls)
		}
		w.str("cmdstat_"+safeInfoString(spec.FullName()), fmt.Sprintf(
			"calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
			cc.Calls, cc.Usec, perCall, cc.Rejected, cc.Failed))
	}
	for _, name := range names {
		spec := s.table.byName[name]
		line(spec)
		for _, sub := range sortedSubcommands(spec) {
			line(sub)
		}
	}
}

// sortedSubcommands returns a container's subcommands in name order.
func sortedSubcommands(spec *command.Spec) []*command.Spec {
	subs := make([]*command.Spec, 0, len(spec.Subcommands))
	for _, sub := range spec.Subcommands {
		subs = append(subs, sub)
	}
	slices.SortFunc(subs, func(a, b *command.Spec) int { return strings.Compare(a.Name, b.Name) })
	return subs
}

// resetServerStats implements what CONFIG RESETSTAT resets (Redis's
// resetServerStats, resetCommandTableStats and resetErrorTableStats): the
// server counters, the command and error statistics and the keyspace
// hits/misses and expired keys. The slow log and shoal_command_panics are
// kept.
func (s *Server) resetServerStats() {
	st := &s.stats
	st.connectionsReceived.Store(0)
	st.rejectedConns.Store(0)
	s.resetTrafficTotals()
	st.unexpectedErrors.Store(0)
	st.resetErrors()
	for _, spec := range s.table.byName {
		s.table.resetCounters(spec)
		for _, sub := range spec.Subcommands {
			s.table.resetCounters(sub)
		}
	}
	s.ks.ResetStats()
	s.aux().resetSamples()
	s.repl.syncFull.Store(0) // sync_full, sync_partial_ok/err, as Redis
	s.repl.syncPartialOK.Store(0)
	s.repl.syncPartialErr.Store(0)
}

// ---------------------------------------------------------------- aux state

// serverAux is the state INFO and the server commands keep: the
// instantaneous-metrics samples, the memory peak, the replication id and the
// current listen address. The Server owns one (Server.auxState).
type serverAux struct {
	startupMemory uint64
	peakMemory    atomic.Uint64
	replid        atomic.Pointer[string]
	hooksOnce     sync.Once // registerServerConfigHooks

	listenMu    sync.Mutex // serialises listener changes (CONFIG SET port/bind)
	listenPort  int64      // the port and bind addresses now listened on
	listenBinds []string

	mu      sync.Mutex
	samples [opsSamples]opsSample
	next    int // index of the next sample to write
	count   int // valid samples
}

// opsSamples is the number of samples averaged (Redis's STATS_METRIC_SAMPLES).
const opsSamples = 16

// opsSampleEvery is the minimum interval between two samples (Redis samples
// every 100 ms from its cron).
const opsSampleEvery = 100 * time.Millisecond

type opsSample struct {
	at                time.Time
	commands, in, out int64
}

// aux returns the server's auxiliary state.
func (s *Server) aux() *serverAux { return s.auxState }

// newServerAux builds the auxiliary state when the server is created.
func newServerAux() *serverAux {
	a := &serverAux{startupMemory: readMemoryFigures().used}
	a.replid.Store(ptrTo(newReplID()))
	return a
}

func ptrTo[T any](v T) *T { return &v }

// newReplID returns a random 40-hex-digit replication id.
func newReplID() string {
	var id [20]byte
	_, _ = rand.Read(id[:])
	return hex.EncodeToString(id[:])
}

func (a *serverAux) replID() string { return *a.replid.Load() }

// changeReplID implements DEBUG CHANGE-REPL-ID.
func (a *serverAux) changeReplID() { a.replid.Store(ptrTo(newReplID())) }

// notePeak records used as a candidate peak and returns the peak.
func (a *serverAux) notePeak(used uint64) uint64 {
	for {
		p := a.peakMemory.Load()
		if used <= p {
			return p
		}
		if a.peakMemory.CompareAndSwap(p, used) {
			return used
		}
	}
}

// sampleOps takes one instantaneous-metrics sample (at most one per 100 ms).
// INFO calls it, so the figures are right without help; calling it from the
// server cron as well makes them as fresh as Redis's.
func (s *Server) sampleOps() {
	a := s.aux()
	a.mu.Lock()
	a.sampleLocked(s, time.Now())
	a.mu.Unlock()
	a.notePeak(uint64(s.usedMemory()))
}

// readMetricUint64 reads one runtime/metrics counter (0 if unknown).
func readMetricUint64(name string) uint64 {
	sample := []metrics.Sample{{Name: name}}
	metrics.Read(sample)
	if sample[0].Value.Kind() == metrics.KindUint64 {
		return sample[0].Value.Uint64()
	}
	return 0
}

func (a *serverAux) sampleLocked(s *Server, now time.Time) {
	if a.count > 0 {
		last := a.samples[(a.next+opsSamples-1)%opsSamples]
		if now.Sub(last.at) < opsSampleEvery {
			return
		}
	}
	commands, in, out := s.trafficTotals()
	a.samples[a.next] = opsSample{at: now, commands: commands, in: in, out: out}
	a.next = (a.next + 1) % opsSamples
	a.count = min(a.count+1, opsSamples)
}

// instantaneous returns the operations per second and the input and output
// kilobytes per second over the sampled window, as of now.
func (a *serverAux) instantaneous(s *Server) (ops int64, inKbps, outKbps float64) {
	now := time.Now()
	commands, in, out := s.trafficTotals()
	cur := opsSample{at: now, commands: commands, in: in, out: out}
	a.mu.Lock()
	defer a.mu.Unlock()
	// The oldest sample no older than the window Redis averages over.
	window := opsSamples * opsSampleEvery
	var oldest *opsSample
	for i := 0; i < a.count; i++ {
		sm := &a.samples[(a.next-a.count+i+2*opsSamples)%opsSamples]
		if now.Sub(sm.at) <= window {
			oldest = sm
			break
		}
	}
	if oldest != nil {
		if secs := now.Sub(oldest.at).Seconds(); secs > 0 {
			ops = int64(float64(cur.commands-oldest.commands) / secs)
			inKbps = float64(cur.in-oldest.in) / secs / 1024
			outKbps = float64(cur.out-oldest.out) / secs / 1024
		}
	}
	a.sampleLocked(s, now)
	return max(ops, 0), max(inKbps, 0), max(outKbps, 0)
}

func (a *serverAux) resetSamples() {
	a.mu.Lock()
	a.next, a.count = 0, 0
	a.mu.Unlock()
}
