package integration

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// The deployment tests (issue 9): the command lines of
// deploy/docker-compose.host.yml, run as plain processes on free ports,
// must form a healthy 3+3 cluster with no manual step.

// formTimeout is the promise of the self-forming cluster: healthy (every
// node cluster_state:ok, 3 masters with 3 replicas, redis-cli --cluster
// check clean) within 15 s of the start.
const formTimeout = 15 * time.Second

// composeFile is the part of a docker-compose file the tests read.
type composeFile struct {
	Services map[string]composeService `json:"services"`
}

type composeService struct {
	Image       string   `json:"image"`
	NetworkMode string   `json:"network_mode"`
	Command     []string `json:"command"`
	Profiles    []string `json:"profiles"`
	Healthcheck struct {
		Test []string `json:"test"`
	} `json:"healthcheck"`
}

// isProbe reports whether the service is the ready probe (shoal-server
// --wait-cluster), not a node.
func (s composeService) isProbe() bool {
	return len(s.Command) > 0 && s.Command[0] == "--wait-cluster"
}

// nodes returns the node services (the ready probe left out).
func (cf composeFile) nodes() map[string]composeService {
	out := map[string]composeService{}
	for name, svc := range cf.Services {
		if !svc.isProbe() {
			out[name] = svc
		}
	}
	return out
}

// hostComposeCommands returns the command lines of the host-network compose
// file, by service name.
func hostComposeCommands(t *testing.T) (names []string, cmds map[string][]string) {
	t.Helper()
	root, err := ModuleRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "deploy", "docker-compose.host.yml"))
	require.NoError(t, err)
	var cf composeFile
	require.NoError(t, yaml.Unmarshal(data, &cf))
	cmds = map[string][]string{}
	for name, svc := range cf.nodes() {
		require.Equal(t, "host", svc.NetworkMode, name)
		require.NotEmpty(t, svc.Command, name)
		names = append(names, name)
		cmds[name] = svc.Command
	}
	slices.Sort(names)
	return names, cmds
}

// directive returns the value of --name in a command line.
func directive(cmd []string, name string) string {
	for i := 0; i+1 < len(cmd); i++ {
		if cmd[i] == "--"+name {
			return cmd[i+1]
		}
	}
	return ""
}

// deployNode is one compose service run as a process: its compose ports
// and the free ports it really uses.
type deployNode struct {
	*ClusterNode
	service                 string
	composePort, composeBus int
	MetricsPort             int
}

// remapped is the compose command line with the ports replaced by this
// run's (also inside --cluster-seeds) and without the directives the
// harness sets itself (--port, --bind, --dir).
func remapped(t *testing.T, cmd []string, ports map[int]int) []string {
	t.Helper()
	var out []string
	for i := 0; i < len(cmd); i++ {
		arg := cmd[i]
		if !strings.HasPrefix(arg, "--") || i+1 >= len(cmd) {
			out = append(out, arg)
			continue
		}
		val := cmd[i+1]
		i++
		switch arg {
		case "--port", "--bind", "--dir":
			continue
		case "--cluster-port", "--metrics-port":
			p, err := strconv.Atoi(val)
			require.NoError(t, err)
			val = strconv.Itoa(ports[p])
		case "--cluster-seeds":
			var seeds []string
			for _, s := range strings.Split(val, ",") {
				host, rest, _ := strings.Cut(s, ":")
				portStr, busStr, _ := strings.Cut(rest, "@")
				p, _ := strconv.Atoi(portStr)
				b, _ := strconv.Atoi(busStr)
				require.Contains(t, ports, p, "seed %s", s)
				seeds = append(seeds, fmt.Sprintf("%s:%d@%d", host, ports[p], ports[b]))
			}
			val = strings.Join(seeds, ",")
		}
		out = append(out, arg, val)
	}
	return out
}

// startHostCompose starts every service of the host compose file as a
// process on free ports and returns them, started concurrently.
func startHostCompose(t *testing.T) []*deployNode {
	t.Helper()
	if testing.Short() {
		t.Skip("a 6-node self-forming cluster (skipped with -short)")
	}
	bin := BuildServer(t)
	names, cmds := hostComposeCommands(t)
	ports := map[int]int{} // compose port → this run's
	taken := map[int]bool{}
	free := func(bus bool) int {
		for range 100 {
			var p int
			var err error
			if bus {
				p, err = testharness.FreeBusPort()
			} else {
				p, err = testharness.FreePort()
			}
			require.NoError(t, err)
			if !taken[p] {
				taken[p] = true
				return p
			}
		}
		t.Fatal("no distinct free port")
		return 0
	}
	nodes := make([]*deployNode, len(names))
	for i, name := range names {
		cmd := cmds[name]
		port, _ := strconv.Atoi(directive(cmd, "port"))
		bus, _ := strconv.Atoi(directive(cmd, "cluster-port"))
		metrics, _ := strconv.Atoi(directive(cmd, "metrics-port"))
		require.NotZero(t, port*bus*metrics, "%s needs --port, --cluster-port and --metrics-port", name)
		ports[port], ports[bus], ports[metrics] = free(false), free(true), free(false)
		nodes[i] = &deployNode{service: name, composePort: port, composeBus: bus}
	}
	for i, name := range names {
		dir := t.TempDir()
		s := &Server{Bin: bin, Dir: dir, t: t, logPath: filepath.Join(dir, "server.log")}
		n := nodes[i]
		n.ClusterNode = &ClusterNode{Server: s, CPort: ports[n.composeBus]}
		s.Port = ports[n.composePort]
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
		s.Args = remapped(t, cmds[name], ports)
		n.MetricsPort, _ = strconv.Atoi(directive(s.Args, "metrics-port"))
		t.Cleanup(func() { s.stopAndReport(t, name) })
	}
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = n.start()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "starting %s", nodes[i].service)
	}
	// At the end of the test (before the harness stops them: cleanups run
	// last-in first-out) the nodes stop without handing slots over.
	t.Cleanup(func() {
		for _, n := range nodes {
			_, _ = Query(n.Addr, "CONFIG", "SET", "cluster-failover-on-shutdown", "0")
		}
	})
	return nodes
}

func clusterNodesOf(nodes []*deployNode) []*ClusterNode {
	out := make([]*ClusterNode, len(nodes))
	for i, n := range nodes {
		out[i] = n.ClusterNode
	}
	return out
}

// formedAsPlanned reports why the cluster is not the 3+3 the bootstrap
// promises ("" = it is): three masters with a third of the slots each and
// one replica each, seen alike by every node.
func formedAsPlanned(nodes []*ClusterNode) string {
	if why := clusterSettled(nodes, 3); why != "" {
		return why
	}
	for _, n := range nodes {
		lines, err := ClusterNodes(n.Addr)
		if err != nil {
			return err.Error()
		}
		replicasOf := map[string]int{}
		masters := 0
		for _, l := range lines {
			if l.HasFlag("master") {
				masters++
				if len(l.Slots) != 1 {
					return fmt.Sprintf("%s: master %s serves %v", n.Addr, l.ID, l.Slots)
				}
			} else {
				replicasOf[l.Master]++
			}
		}
		if masters != 3 || len(replicasOf) != 3 {
			return fmt.Sprintf("%s: %d masters, replicas per master %v", n.Addr, masters, replicasOf)
		}
	}
	return ""
}

func TestSelfFormingClusterFromHostCompose(t *testing.T) {
	cli := redisCLIPath(t)
	BuildServer(t)
	start := time.Now()
	nodes := startHostCompose(t)
	cnodes := clusterNodesOf(nodes)
	WaitFor(t, formTimeout, "the cluster to form itself", func() string { return formedAsPlanned(cnodes) })
	var checkOut string
	WaitFor(t, formTimeout-time.Since(start), "redis-cli --cluster check to pass", func() string {
		out, code := RunTool(t, 10*time.Second, cli, "--cluster", "check", nodes[0].Addr)
		checkOut = out
		if code != 0 {
			return out
		}
		return ""
	})
	formed := time.Since(start)
	t.Logf("6 processes started and the 3+3 cluster formed and checked in %v", formed.Round(time.Millisecond))
	require.Contains(t, checkOut, "[OK] All 16384 slots covered.")

	// Every node computed the same assignment: the three smallest ids are
	// the masters, with the slot ranges in id order.
	lines, err := ClusterNodes(nodes[0].Addr)
	require.NoError(t, err)
	var ids []string
	for _, l := range lines {
		ids = append(ids, l.ID)
	}
	slices.Sort(ids)
	wantRanges := []string{"0-5461", "5462-10922", "10923-16383"}
	for _, l := range lines {
		if i := slices.Index(ids, l.ID); i < 3 {
			require.True(t, l.HasFlag("master"), "%s (%d-th id) %s", l.ID, i, l.Flags)
			require.Equal(t, []string{wantRanges[i]}, l.Slots)
		} else {
			require.True(t, l.HasFlag("slave"), "%s (%d-th id) %s", l.ID, i, l.Flags)
			require.Equal(t, ids[(i-3)%3], l.Master)
		}
	}

	goRedisClusterKeys(t, nodes[0].Addr)

	t.Run("metrics", func(t *testing.T) { checkMetricsFamilies(t, nodes) })
	t.Run("prestop", func(t *testing.T) { checkPrestop(t, nodes, start) })
	t.Run("sigterm-handover", func(t *testing.T) { checkShutdownHandover(t, nodes) })

	// A master comes back on other ports from the same directory: same id,
	// slots and role, and the cluster is whole again.
	var victim *deployNode
	for _, n := range nodes {
		me, err := Myself(n.Addr)
		require.NoError(t, err)
		if me.HasFlag("master") {
			victim = n
		}
	}
	before, err := Myself(victim.Addr)
	require.NoError(t, err)
	oldPort := victim.Port
	// This restart keeps the role: no handover at shutdown.
	_, err = Query(victim.Addr, "CONFIG", "SET", "cluster-failover-on-shutdown", "0")
	require.NoError(t, err)
	restartOnNewPorts(t, victim)
	require.NotEqual(t, oldPort, victim.Port)
	after, err := Myself(victim.Addr)
	require.NoError(t, err)
	require.Equal(t, before.ID, after.ID)
	require.Equal(t, before.Slots, after.Slots)
	require.Equal(t, "myself,master", after.Flags)
	require.Equal(t, fmt.Sprintf("127.0.0.1:%d@%d", victim.Port, victim.CPort), after.Addr)
	WaitFor(t, settleTimeout, "every node to know the moved master by its id at its new address", func() string {
		for _, n := range cnodes {
			lines, err := ClusterNodes(n.Addr)
			if err != nil {
				return err.Error()
			}
			for _, l := range lines {
				if l.ID == before.ID && (l.Addr != after.Addr || !l.HasFlag("master") || !slices.Equal(l.Slots, before.Slots)) {
					return fmt.Sprintf("%s has %s at %s %s %v", n.Addr, l.ID, l.Addr, l.Flags, l.Slots)
				}
			}
		}
		return ""
	})
	WaitFor(t, settleTimeout, "the cluster to settle as planned", func() string { return formedAsPlanned(cnodes) })
	out, code := RunTool(t, 30*time.Second, cli, "--cluster", "check", victim.Addr)
	require.Equal(t, 0, code, out)
}

// restartOnNewPorts stops a node and starts it again from its directory on
// new free client, bus and metrics ports, with the rest of its command line
// (its seeds included) unchanged.
func restartOnNewPorts(t *testing.T, n *deployNode) {
	t.Helper()
	n.Stop()
	for range startAttempts {
		port, err := testharness.FreePort()
		require.NoError(t, err)
		cport, err := testharness.FreeBusPort()
		require.NoError(t, err)
		mport, err := testharness.FreePort()
		require.NoError(t, err)
		if port == n.Port || cport == n.CPort || port == cport || mport == port || mport == cport {
			continue
		}
		args := slices.Clone(n.Args)
		for i := 0; i+1 < len(args); i++ {
			switch args[i] {
			case "--cluster-port":
				args[i+1] = strconv.Itoa(cport)
			case "--metrics-port":
				args[i+1] = strconv.Itoa(mport)
			}
		}
		n.Port, n.CPort, n.MetricsPort, n.Args = port, cport, mport, args
		n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		busy, err := n.start()
		if err == nil {
			return
		}
		if !busy {
			t.Fatalf("restarting %s: %v", n.service, err)
		}
	}
	t.Fatalf("could not restart %s on new ports", n.service)
}

// metricFamilies are the families every node's /metrics must show (issue
// 9): commands, latency, keys, memory, clients, cluster state, epochs,
// PFAIL/FAIL counts, replication and per-slot figures.
var metricFamilies = []string{
	"shoal_commands_total", "shoal_command_duration_seconds", "shoal_db_keys", "shoal_memory_used_bytes",
	"shoal_connected_clients", "shoal_cluster_state_ok", "shoal_cluster_current_epoch", "shoal_cluster_config_epoch",
	"shoal_cluster_nodes_flagged", "shoal_replication_master", "shoal_replication_offset_bytes",
	"shoal_slot_keys", "shoal_slot_commands_total", "shoal_ready",
}

// checkMetricsFamilies GETs /metrics of every node (after the 10,000 keys
// were written), parses the text format and checks the families and a few
// values against the cluster; /ready is 200 everywhere.
func checkMetricsFamilies(t *testing.T, nodes []*deployNode) {
	cl := &http.Client{Timeout: 5 * time.Second}
	var keys, masters float64
	for _, n := range nodes {
		resp, err := cl.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", n.MetricsPort))
		require.NoError(t, err)
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		require.NoError(t, err, n.service)
		for _, name := range metricFamilies {
			require.Contains(t, fams, name, "%s /metrics", n.service)
		}
		require.Equal(t, dto.MetricType_HISTOGRAM, fams["shoal_command_duration_seconds"].GetType())
		require.Equal(t, 1.0, fams["shoal_cluster_state_ok"].Metric[0].GetGauge().GetValue(), n.service)
		for _, m := range fams["shoal_cluster_nodes_flagged"].Metric {
			require.Zero(t, m.GetGauge().GetValue(), "%s flagged nodes", n.service)
		}
		if fams["shoal_replication_master"].Metric[0].GetGauge().GetValue() == 1 {
			masters++
			for _, m := range fams["shoal_db_keys"].Metric {
				keys += m.GetGauge().GetValue()
			}
		}
		resp, err = cl.Get(fmt.Sprintf("http://127.0.0.1:%d/ready", n.MetricsPort))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s /ready", n.service)
	}
	require.Equal(t, 3.0, masters)
	require.GreaterOrEqual(t, keys, 10000.0, "keys on the masters")
}

// checkPrestop runs the Kubernetes preStop hook (shoal-server --prestop)
// against a replica (nothing to do) and a master: the master's replica is
// asked for CLUSTER FAILOVER; when this build serves it, the two swap roles
// and the cluster settles again, else the hook says so and exits 0 at once.
func checkPrestop(t *testing.T, nodes []*deployNode, started time.Time) {
	bin := BuildServer(t)
	var master, replica *deployNode
	for _, n := range nodes {
		me, err := Myself(n.Addr)
		require.NoError(t, err)
		switch {
		case me.HasFlag("master") && master == nil:
			master = n
		case me.HasFlag("slave") && replica == nil:
			replica = n
		}
	}
	out, code := RunTool(t, 10*time.Second, bin, "--prestop", strconv.Itoa(replica.Port), "5")
	require.Equal(t, 0, code, out)
	require.Contains(t, out, "not a master serving slots")

	waitVoteGrace(t, nodes[0].Args, started)
	before, err := Myself(master.Addr)
	require.NoError(t, err)
	start := time.Now()
	out, code = RunTool(t, 40*time.Second, bin, "--prestop", strconv.Itoa(master.Port), "20")
	require.Equal(t, 0, code, out)
	t.Logf("prestop on master %s after %v: %s", master.service, time.Since(start).Round(time.Millisecond), strings.TrimSpace(out))
	if strings.Contains(out, "took over the slots") {
		after, err := Myself(master.Addr)
		require.NoError(t, err)
		require.True(t, after.HasFlag("slave"), after.Flags)
		require.Equal(t, before.ID, after.ID)
		cnodes := clusterNodesOf(nodes)
		WaitFor(t, settleTimeout, "the cluster to settle after the handover", func() string { return formedAsPlanned(cnodes) })
		return
	}
	require.Contains(t, out, "stopping without a failover")
	require.Less(t, time.Since(start), 10*time.Second, "a refused handover must not hold the pod")
	me, err := Myself(master.Addr)
	require.NoError(t, err)
	require.True(t, me.HasFlag("master"))
}

// TestSelfFormedClusterSurvivesEveryNodeMoving stops every node and starts
// them all again on new ports at once, each from its directory, with seeds
// naming the new addresses by a host name (as a Kubernetes headless
// Service's names do after every pod got a new IP): no nodes.conf holds a
// valid peer address,
// yet every node keeps its id, slots and role, and the cluster is whole.
func TestSelfFormedClusterSurvivesEveryNodeMoving(t *testing.T) {
	cli := redisCLIPath(t)
	nodes := startHostCompose(t)
	cnodes := clusterNodesOf(nodes)
	WaitFor(t, formTimeout, "the cluster to form itself", func() string { return formedAsPlanned(cnodes) })
	before := map[string]NodeLine{} // by directory
	for _, n := range nodes {
		me, err := Myself(n.Addr)
		require.NoError(t, err)
		before[n.Dir] = me
	}
	for _, n := range nodes {
		// Roles must survive as they are: no handover at this shutdown.
		_, err := Query(n.Addr, "CONFIG", "SET", "cluster-failover-on-shutdown", "0")
		require.NoError(t, err)
	}
	for _, n := range nodes {
		n.Stop()
	}
	// New client, bus and metrics ports for everyone, distinct from the old.
	taken := map[int]bool{}
	for _, n := range nodes {
		taken[n.Port], taken[n.CPort], taken[n.MetricsPort] = true, true, true
	}
	pick := func(bus bool) int {
		for range 100 {
			var p int
			var err error
			if bus {
				p, err = testharness.FreeBusPort()
			} else {
				p, err = testharness.FreePort()
			}
			require.NoError(t, err)
			if !taken[p] {
				taken[p] = true
				return p
			}
		}
		t.Fatal("no distinct free port")
		return 0
	}
	var seeds []string
	for _, n := range nodes {
		n.Port, n.CPort, n.MetricsPort = pick(false), pick(true), pick(false)
		n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port))
		// By name, resolved by each node (localhost: 127.0.0.1 and ::1).
		seeds = append(seeds, fmt.Sprintf("localhost:%d@%d", n.Port, n.CPort))
	}
	for _, n := range nodes {
		// Addresses, not failover, are under test: while the nodes look for
		// each other (longer than cluster-node-timeout), no replica may
		// take its master's place.
		// They also come back announcing a host name, and clients are to
		// be redirected by it (as the StatefulSet's pods are).
		args := append(slices.Clone(n.Args), "--cluster-replica-no-failover", "yes",
			"--cluster-announce-hostname", "localhost", "--cluster-preferred-endpoint-type", "hostname")
		for i := 0; i+1 < len(args); i++ {
			switch args[i] {
			case "--cluster-port":
				args[i+1] = strconv.Itoa(n.CPort)
			case "--metrics-port":
				args[i+1] = strconv.Itoa(n.MetricsPort)
			case "--cluster-seeds":
				args[i+1] = strings.Join(seeds, ",")
			}
		}
		n.Args = args
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = n.start()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "restarting %s", nodes[i].service)
	}
	WaitFor(t, 45*time.Second, "every node to find the others at their new addresses", func() string {
		if why := formedAsPlanned(cnodes); why != "" {
			return why
		}
		for _, n := range nodes {
			me, err := Myself(n.Addr)
			if err != nil {
				return err.Error()
			}
			was := before[n.Dir]
			if me.ID != was.ID || !slices.Equal(me.Slots, was.Slots) || me.HasFlag("master") != was.HasFlag("master") || me.Master != was.Master {
				return fmt.Sprintf("%s: %s %s %v, was %s %s %v", n.service, me.ID, me.Flags, me.Slots, was.ID, was.Flags, was.Slots)
			}
		}
		return ""
	})
	t.Logf("all 6 nodes moved to new ports: whole again, same ids, slots and roles, in %v", time.Since(start).Round(time.Millisecond))
	out, code := RunTool(t, 30*time.Second, cli, "--cluster", "check", nodes[0].Addr)
	require.Equal(t, 0, code, out)

	// Redirects name the host name; a cluster client follows them.
	key := "moved-by-name"
	slot := int(slots.KeySlot([]byte(key)))
	var owner *deployNode
	for _, n := range nodes {
		me, err := Myself(n.Addr)
		require.NoError(t, err)
		for _, r := range me.Slots {
			lo, hi, _ := strings.Cut(r, "-")
			a, _ := strconv.Atoi(lo)
			b, _ := strconv.Atoi(hi)
			if me.HasFlag("master") && slot >= a && slot <= b {
				owner = n
			}
		}
	}
	require.NotNil(t, owner)
	other := nodes[0]
	if other == owner {
		other = nodes[1]
	}
	moved, err := Query(other.Addr, "GET", key)
	require.NoError(t, err)
	if me, _ := Myself(other.Addr); me.HasFlag("master") {
		require.Equal(t, fmt.Sprintf("-MOVED %d localhost:%d", slot, owner.Port), moved)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"localhost:" + strconv.Itoa(nodes[0].Port)}})
	defer cc.Close()
	require.NoError(t, cc.Set(ctx, key, "v", 0).Err())
	got, err := cc.Get(ctx, key).Result()
	require.NoError(t, err)
	require.Equal(t, "v", got)

	// A seventh node with the same settings joins later: it becomes a
	// replica of the master with the fewest replicas (all have one: the
	// smallest id).
	var masterIDs []string
	for _, n := range nodes {
		if me, err := Myself(n.Addr); err == nil && me.HasFlag("master") {
			masterIDs = append(masterIDs, me.ID)
		}
	}
	slices.Sort(masterIDs)
	require.Len(t, masterIDs, 3)
	dir := t.TempDir()
	late := &deployNode{service: "late", ClusterNode: &ClusterNode{Server: &Server{Bin: BuildServer(t), Dir: dir, t: t,
		logPath: filepath.Join(dir, "server.log")}}}
	t.Cleanup(late.Stop)
	late.Port, late.CPort, late.MetricsPort = pick(false), pick(true), pick(false)
	late.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(late.Port))
	late.Args = slices.Clone(nodes[0].Args)
	for i := 0; i+1 < len(late.Args); i++ {
		switch late.Args[i] {
		case "--cluster-port":
			late.Args[i+1] = strconv.Itoa(late.CPort)
		case "--metrics-port":
			late.Args[i+1] = strconv.Itoa(late.MetricsPort)
		}
	}
	_, err = late.start()
	require.NoError(t, err)
	all := append(slices.Clone(cnodes), late.ClusterNode)
	WaitFor(t, formTimeout, "the late node to join as a replica", func() string {
		me, err := Myself(late.Addr)
		if err != nil {
			return err.Error()
		}
		if !me.HasFlag("slave") || me.Master != masterIDs[0] {
			return fmt.Sprintf("late node is %s of %q, want a replica of %s", me.Flags, me.Master, masterIDs[0])
		}
		return clusterSettled(all, 4)
	})
}

// checkShutdownHandover stops a master with SIGTERM, as `docker stop` does:
// with cluster-failover-on-shutdown (set in the compose files) it first
// hands its slots to its replica, so that every acknowledged key is still
// readable after it restarts (as a replica; the full sync replaces what its final save kept). When
// this build cannot fail over, the node stops as a master and says so.
func checkShutdownHandover(t *testing.T, nodes []*deployNode) {
	var victim *deployNode
	for _, n := range nodes {
		me, err := Myself(n.Addr)
		require.NoError(t, err)
		if me.HasFlag("master") {
			victim = n
			break
		}
	}
	before, err := Myself(victim.Addr)
	require.NoError(t, err)
	start := time.Now()
	victim.Restart() // SIGTERM, wait, start again from the same directory
	t.Logf("SIGTERM + restart of master %s: %v", victim.service, time.Since(start).Round(time.Millisecond))
	log := victim.Log()
	i := strings.LastIndex(log, "cluster-failover-on-shutdown: ")
	require.GreaterOrEqual(t, i, 0, "the handover is logged")
	what := log[i:]
	what = what[:strings.IndexByte(what, '\t')]
	t.Logf("%s", what)
	cnodes := clusterNodesOf(nodes)
	if !strings.Contains(what, "took over the slots") {
		require.Contains(t, what, "stopping without a failover")
		WaitFor(t, settleTimeout, "the cluster to settle", func() string { return formedAsPlanned(cnodes) })
		return
	}
	WaitFor(t, settleTimeout, "the cluster to settle with the old master as a replica", func() string {
		me, err := Myself(victim.Addr)
		if err != nil {
			return err.Error()
		}
		if me.ID != before.ID || !me.HasFlag("slave") {
			return fmt.Sprintf("%s is %s %s", victim.service, me.ID, me.Flags)
		}
		return formedAsPlanned(cnodes)
	})
	readAllKeys(t, victim.Addr)
}

// readAllKeys reads back the 10,000 keys goRedisClusterKeys wrote.
func readAllKeys(t *testing.T, seed string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{seed}, MaxRedirects: 5})
	defer cc.Close()
	for lo := 0; lo < 10000; lo += 1000 {
		cmds, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < lo+1000; i++ {
				p.Get(ctx, "gr:"+strconv.Itoa(i))
			}
			return nil
		})
		require.NoError(t, err)
		for j, c := range cmds {
			require.Equal(t, "value-"+strconv.Itoa((lo+j)*7), c.(*redis.StringCmd).Val(), "gr:%d", lo+j)
		}
	}
}

// waitVoteGrace waits until masters started at started vote in failover
// elections: they refuse for 2 × cluster-node-timeout after their start (a
// node that just started may hold a stale view of the slots), so a
// handover asked for earlier cannot complete. Pods are rarely drained
// seconds after they started; the tests wait as the real thing would.
func waitVoteGrace(t *testing.T, args []string, started time.Time) {
	t.Helper()
	nt, err := strconv.Atoi(directive(args, "cluster-node-timeout"))
	require.NoError(t, err)
	if d := time.Until(started.Add(2*time.Duration(nt)*time.Millisecond + time.Second)); d > 0 {
		t.Logf("waiting %v for the masters' vote grace (2 x cluster-node-timeout after their start)", d.Round(time.Millisecond))
		time.Sleep(d)
	}
}
