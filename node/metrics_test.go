package node

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/slots"
)

// scrapeMetrics GETs http://127.0.0.1:port/metrics and parses it.
func scrapeMetrics(t *testing.T, port int) map[string]*dto.MetricFamily {
	t.Helper()
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// metricValue is the value of the family's sample whose labels include
// want (a gauge, counter or untyped value; a histogram's sample count).
func metricValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("no family %s", name)
	}
next:
	for _, m := range f.Metric {
		got := map[string]string{}
		for _, l := range m.Label {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no %s sample with %v", name, want)
	return 0
}

func httpStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestMetricsEndpointAndReadiness(t *testing.T) {
	mport := testharness.BusPort(t)
	n := startClusterTestServer(t, "", "--metrics-port", strconv.Itoa(mport), "--cluster-slot-stats-enabled", "yes")
	ready := fmt.Sprintf("http://127.0.0.1:%d/ready", mport)
	if code, body := httpStatus(t, ready); code != http.StatusServiceUnavailable {
		t.Fatalf("/ready of a node without slots = %d %q", code, body)
	}
	if code, _ := httpStatus(t, fmt.Sprintf("http://127.0.0.1:%d/live", mport)); code != http.StatusOK {
		t.Fatalf("/live = %d", code)
	}
	tc := dialTest(t, n.srv)
	if r := tc.do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); r != "+OK\r\n" {
		t.Fatalf("ADDSLOTSRANGE: %q", r)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := httpStatus(t, ready)
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ready still %d %q", code, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := range 10 {
		if r := tc.do("SET", "{m}"+strconv.Itoa(i), "v"); r != "+OK\r\n" {
			t.Fatalf("SET: %q", r)
		}
	}
	tc.do("GET", "{m}0")
	tc.do("GET", "nokey")

	fams := scrapeMetrics(t, mport)
	for _, name := range []string{"shoal_commands_total", "shoal_command_duration_seconds", "shoal_db_keys",
		"shoal_memory_used_bytes", "shoal_connected_clients", "shoal_cluster_state_ok", "shoal_cluster_current_epoch",
		"shoal_cluster_config_epoch", "shoal_cluster_nodes_flagged", "shoal_replication_offset_bytes",
		"shoal_replication_master", "shoal_slot_keys", "shoal_slot_commands_total", "shoal_slot_cpu_seconds_total",
		"shoal_slot_network_bytes_total", "shoal_ready", "go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := fams[name]; !ok {
			t.Errorf("family %s missing", name)
		}
	}
	if fams["shoal_command_duration_seconds"].GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("shoal_command_duration_seconds is %v", fams["shoal_command_duration_seconds"].GetType())
	}
	slot := strconv.Itoa(int(slots.KeySlot([]byte("{m}"))))
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"shoal_commands_total", map[string]string{"cmd": "set"}, 10},
		{"shoal_commands_total", map[string]string{"cmd": "get"}, 2},
		{"shoal_command_duration_seconds", map[string]string{"cmd": "set"}, 10},
		{"shoal_db_keys", map[string]string{"db": "0"}, 10},
		{"shoal_cluster_state_ok", nil, 1},
		{"shoal_ready", nil, 1},
		{"shoal_cluster_myself_slots", nil, slots.Count},
		{"shoal_cluster_nodes_flagged", map[string]string{"flag": "pfail"}, 0},
		{"shoal_cluster_bus_rejected_total", nil, 0},
		{"shoal_slot_keys", map[string]string{"slot": slot}, 10},
		{"shoal_slot_commands_total", map[string]string{"slot": slot}, 11},
		// 10 SETs of 30 request bytes and one GET of 23; +OK and $1 v replies.
		{"shoal_slot_network_bytes_total", map[string]string{"slot": slot, "direction": "in"}, 10*30 + 23},
		{"shoal_slot_network_bytes_total", map[string]string{"slot": slot, "direction": "out"}, 10*5 + 7},
	} {
		if got := metricValue(t, fams, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestMetricsWithoutSlots(t *testing.T) {
	mport := testharness.BusPort(t)
	n := startClusterTestServer(t, "", "--metrics-port", strconv.Itoa(mport))
	tc := dialTest(t, n.srv)
	if r := tc.do("CLUSTER", "ADDSLOTSRANGE", "0", "16383"); r != "+OK\r\n" {
		t.Fatalf("ADDSLOTSRANGE: %q", r)
	}
	for i := 0; !n.srv.cluster.Slots().Load().OK; i++ {
		if i > 500 {
			t.Fatal("cluster_state never became ok")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r := tc.do("SET", "k", "v"); r != "+OK\r\n" {
		t.Fatalf("SET: %q", r)
	}
	code, body := httpStatus(t, fmt.Sprintf("http://127.0.0.1:%d/metrics?slots=false", mport))
	if code != http.StatusOK || !strings.Contains(body, "shoal_cluster_state_ok 1") || !strings.Contains(body, `shoal_commands_total{cmd="set"} 1`) {
		t.Fatalf("/metrics?slots=false = %d:\n%s", code, body)
	}
	if strings.Contains(body, "shoal_slot_") {
		t.Fatal("/metrics?slots=false has per-slot series")
	}
	// Without cluster-slot-stats-enabled: keys and calls per slot only.
	fams := scrapeMetrics(t, mport)
	if _, ok := fams["shoal_slot_cpu_seconds_total"]; ok {
		t.Error("per-slot CPU time without cluster-slot-stats-enabled")
	}
	slot := strconv.Itoa(int(slots.KeySlot([]byte("k"))))
	if v := metricValue(t, fams, "shoal_slot_keys", map[string]string{"slot": slot}); v != 1 {
		t.Errorf("shoal_slot_keys = %v", v)
	}
}

func TestLatencyBuckets(t *testing.T) {
	var h latencyBuckets
	for _, d := range []time.Duration{0, 500 * time.Nanosecond, time.Microsecond, 3 * time.Microsecond, time.Millisecond, time.Hour} {
		h.observe(d)
	}
	// 0 µs and 0.5 µs → bucket 0 (< 1 µs), 1 µs → 1 (< 2), 3 µs → 2 (< 4),
	// 1000 µs → 10 (< 1024), an hour → overflow.
	want := map[int]int64{0: 2, 1: 1, 2: 1, 10: 1, latencyBucketCount - 1: 1}
	for i := range h {
		if h[i].Load() != want[i] {
			t.Errorf("bucket %d = %d, want %d", i, h[i].Load(), want[i])
		}
	}
	if latencyUpperBound(10) != 1024e-6 {
		t.Errorf("bound 10 = %v", latencyUpperBound(10))
	}
}

func TestMetricsPortOffByDefault(t *testing.T) {
	s := startTestServer(t)
	if s.cfg.Int("metrics-port") != 0 {
		t.Fatal("metrics-port default is not 0")
	}
	if !strings.Contains(dialTest(t, s).do("CONFIG", "GET", "metrics-port"), "metrics-port") {
		t.Fatal("CONFIG GET metrics-port does not name the directive")
	}
}

// The per-command cost the metrics add to the hot path.
func BenchmarkLatencyObserve(b *testing.B) {
	var h latencyBuckets
	d := 3 * time.Microsecond
	for b.Loop() {
		h.observe(d)
	}
}

func BenchmarkSlotStatsRecord(b *testing.B) {
	args := [][]byte{[]byte("SET"), []byte("key:000001"), []byte("value")}
	for _, enabled := range []bool{false, true} {
		b.Run("enabled="+strconv.FormatBool(enabled), func(b *testing.B) {
			st := &slotStats{enabled: func() bool { return enabled }}
			for b.Loop() {
				st.record(1234, args, 3*time.Microsecond, 5)
			}
		})
	}
}

// TestMetricsConnectedClientsExcludesReplicas: shoal_connected_clients is
// INFO's connected_clients, which (as in Redis) does not count a replica's
// link as a client.
func TestMetricsConnectedClientsExcludesReplicas(t *testing.T) {
	mport := testharness.BusPort(t)
	master := startTestServer(t, "--metrics-port", strconv.Itoa(mport))
	replicaSrv := startTestServer(t)
	mc, rc := dialTest(t, master), dialTest(t, replicaSrv)
	replicaOf(t, rc, master)
	waitInSync(t, mc, rc)
	if got := infoField(t, mc, "replication", "connected_slaves"); got != "1" {
		t.Fatalf("connected_slaves = %q", got)
	}
	want, err := strconv.ParseFloat(infoField(t, mc, "clients", "connected_clients"), 64)
	if err != nil || want != 1 {
		t.Fatalf("INFO connected_clients = %v (%v), want 1: this test's own connection", want, err)
	}
	if got := metricValue(t, scrapeMetrics(t, mport), "shoal_connected_clients", nil); got != want {
		t.Errorf("shoal_connected_clients = %v, INFO connected_clients = %v", got, want)
	}
}
