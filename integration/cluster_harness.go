package integration

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
)

// This file extends the harness to cluster nodes: shoal-server processes with
// --cluster-enabled yes on a free client port and a free bus port
// (--cluster-port), each with its own directory holding nodes.conf; a cluster
// created with the real `redis-cli --cluster create`; and the bounded waits
// the tests need.

// ClusterNodeTimeout is the --cluster-node-timeout of the nodes (ms), as in
// scripts/cluster.sh.
const ClusterNodeTimeout = 5000

// ClusterNode is one cluster-enabled server.
type ClusterNode struct {
	*Server
	CPort int // the cluster bus port
}

// clusterArgs are the cluster directives of a node on bus port cport.
func clusterArgs(cport int, extra []string) []string {
	return append([]string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(cport),
		"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", strconv.Itoa(ClusterNodeTimeout),
		"--save", "", "--appendonly", "no"}, extra...)
}

// StartClusterNode starts a cluster-enabled shoal-server on free ports with
// nodes.conf in dir ("" = a fresh t.TempDir()), waits until it is ready, and
// stops it when the test ends. extra are more `--directive value` arguments.
func StartClusterNode(t testing.TB, dir string, extra ...string) *ClusterNode {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	s := &Server{Bin: BuildServer(t), Dir: dir, t: t}
	s.logPath = filepath.Join(dir, "server.log")
	n := &ClusterNode{Server: s}
	t.Cleanup(func() { s.stopAndReport(t, "") })
	if err := n.startOnFreePorts(extra); err != nil {
		t.Fatalf("starting a cluster node in %s: %v (its log follows at cleanup)", dir, err)
	}
	return n
}

// startOnFreePorts (re)starts the node on new free client and bus ports,
// retrying when a port was taken in between.
func (n *ClusterNode) startOnFreePorts(extra []string) error {
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		port, err := testharness.FreePort()
		if err != nil {
			return err
		}
		cport, err := testharness.FreeBusPort()
		if err != nil {
			return err
		}
		if cport == port {
			continue
		}
		n.Port, n.CPort = port, cport
		n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		n.Args = clusterArgs(cport, extra)
		busy, err := n.start()
		if err == nil {
			return nil
		}
		lastErr = err
		if !busy && !strings.Contains(n.Log(), "ddress already in use") {
			break
		}
	}
	return lastErr
}

// RestartOnNewPorts stops the node and starts it again from the same
// directory (the same nodes.conf) on different client and bus ports.
func (n *ClusterNode) RestartOnNewPorts(extra ...string) {
	n.t.Helper()
	n.Stop()
	oldPort := n.Port
	for range startAttempts {
		if err := n.startOnFreePorts(extra); err != nil {
			n.t.Fatalf("restarting the node of %s on new ports: %v", n.Dir, err)
		}
		if n.Port != oldPort {
			return
		}
		n.Stop() // the same port came back by chance: try again
	}
	n.t.Fatalf("could not find a port other than %d", oldPort)
}

// StartClusterNodes starts count nodes concurrently. With -short (make
// test-short) a test of a multi-node cluster is skipped: those take tens of
// seconds each and are what make test is for.
func StartClusterNodes(t *testing.T, count int, extra ...string) []*ClusterNode {
	t.Helper()
	if testing.Short() && count > 1 {
		t.Skipf("a %d-node cluster (skipped with -short)", count)
	}
	BuildServer(t) // build once, outside the goroutines (it may skip)
	nodes := make([]*ClusterNode, count)
	dirs := make([]string, count)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	var wg sync.WaitGroup
	errs := make([]error, count)
	for i := range nodes {
		s := &Server{Bin: BuildServer(t), Dir: dirs[i], t: t}
		s.logPath = filepath.Join(dirs[i], "server.log")
		nodes[i] = &ClusterNode{Server: s}
		t.Cleanup(func() { s.stopAndReport(t, "") })
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = nodes[i].startOnFreePorts(extra)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("starting cluster node %d: %v", i, err)
		}
	}
	return nodes
}

// redisCLIPath is redis-cli from $REDIS_CLI, else /usr/bin/redis-cli, else
// $PATH; the test is skipped when there is none.
func redisCLIPath(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("REDIS_CLI"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/redis-cli"); err == nil {
		return "/usr/bin/redis-cli"
	}
	p, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed (apt-get install redis-tools)")
	}
	return p
}

// RunTool runs a program (redis-cli, redis-benchmark) with the given
// arguments and timeout; it returns the combined output and the exit code
// (-1 when it did not finish in time).
func RunTool(t testing.TB, timeout time.Duration, bin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return out.String(), -1
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("running %s: %v", bin, err)
	}
	return out.String(), 0
}

// CreateCluster runs `redis-cli --cluster create <nodes> --cluster-replicas
// r --cluster-yes` (bounded: redis-cli's own wait for the join never times
// out) and then waits until the cluster has settled (WaitClusterSettled).
func CreateCluster(t *testing.T, nodes []*ClusterNode, replicas int, timeout time.Duration) string {
	t.Helper()
	args := []string{"--cluster", "create"}
	for _, n := range nodes {
		args = append(args, n.Addr)
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, code := RunTool(t, timeout, redisCLIPath(t), args...)
	if code != 0 {
		t.Fatalf("redis-cli %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	if !strings.Contains(out, "[OK] All 16384 slots covered.") {
		t.Fatalf("redis-cli --cluster create did not report full coverage:\n%s", out)
	}
	WaitClusterSettled(t, nodes, len(nodes)-len(nodes)/(replicas+1), timeout)
	return out
}

// NodeLine is one parsed CLUSTER NODES line.
type NodeLine struct {
	ID, Addr, Flags, Master, Epoch, Link string
	Slots                                []string
}

// Port returns the client port of the line's address ("ip:port@cport").
func (l NodeLine) Port() int {
	a := l.Addr
	if i := strings.IndexByte(a, '@'); i >= 0 {
		a = a[:i]
	}
	p, _ := strconv.Atoi(a[strings.LastIndexByte(a, ':')+1:])
	return p
}

// HasFlag reports whether the comma-separated flags include f.
func (l NodeLine) HasFlag(f string) bool {
	for _, x := range strings.Split(l.Flags, ",") {
		if x == f {
			return true
		}
	}
	return false
}

// ParseClusterNodes parses a CLUSTER NODES reply.
func ParseClusterNodes(text string) []NodeLine {
	var out []NodeLine
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		out = append(out, NodeLine{ID: f[0], Addr: f[1], Flags: f[2], Master: f[3], Epoch: f[6], Link: f[7], Slots: f[8:]})
	}
	return out
}

// clusterQueryTimeout bounds one command of the waits below.
const clusterQueryTimeout = 5 * time.Second

// Query sends one command to a node with a fresh connection (RESP2) and
// returns the reply as text: a bulk or status as is, an error as "-...",
// an integer as its digits.
func Query(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, clusterQueryTimeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(clusterQueryTimeout))
	var req bytes.Buffer
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write(req.Bytes()); err != nil {
		return "", err
	}
	var buf []byte
	tmp := make([]byte, 64*1024)
	for {
		k, err := c.Read(tmp)
		buf = append(buf, tmp[:k]...)
		if v, ok := simpleReply(buf); ok {
			return v, nil
		}
		if err != nil {
			return "", fmt.Errorf("reading the reply to %q (got %q): %w", args, buf, err)
		}
	}
}

// simpleReply decodes a complete non-aggregate RESP2 reply.
func simpleReply(b []byte) (string, bool) {
	i := bytes.Index(b, []byte("\r\n"))
	if i < 0 {
		return "", false
	}
	switch b[0] {
	case '+', ':':
		return string(b[1:i]), true
	case '-':
		return string(b[:i]), true
	case '$':
		n, err := strconv.Atoi(string(b[1:i]))
		if err != nil || n < 0 {
			return "", err == nil
		}
		if len(b) < i+2+n+2 {
			return "", false
		}
		return string(b[i+2 : i+2+n]), true
	}
	return string(b), true // aggregates are not decoded here
}

// ClusterNodes returns a node's parsed CLUSTER NODES.
func ClusterNodes(addr string) ([]NodeLine, error) {
	text, err := Query(addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(text, "-") {
		return nil, fmt.Errorf("CLUSTER NODES: %s", text)
	}
	return ParseClusterNodes(text), nil
}

// Myself returns the myself line of a node's CLUSTER NODES.
func Myself(addr string) (NodeLine, error) {
	lines, err := ClusterNodes(addr)
	if err != nil {
		return NodeLine{}, err
	}
	for _, l := range lines {
		if l.HasFlag("myself") {
			return l, nil
		}
	}
	return NodeLine{}, fmt.Errorf("no myself line in CLUSTER NODES of %s", addr)
}

// clusterSettled reports why the cluster is not settled yet ("" = it is):
// every node says cluster_state:ok and lists len(nodes) nodes, none
// failing, in handshake or disconnected, with wantReplicas replicas.
func clusterSettled(nodes []*ClusterNode, wantReplicas int) string {
	for _, n := range nodes {
		info, err := Query(n.Addr, "CLUSTER", "INFO")
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(info, "cluster_state:ok\r\n") {
			return n.Addr + " is not cluster_state:ok"
		}
		lines, err := ClusterNodes(n.Addr)
		if err != nil {
			return err.Error()
		}
		if len(lines) != len(nodes) {
			return fmt.Sprintf("%s knows %d nodes, not %d", n.Addr, len(lines), len(nodes))
		}
		replicas := 0
		for _, l := range lines {
			if l.HasFlag("fail") || l.HasFlag("fail?") || l.HasFlag("handshake") || l.HasFlag("noaddr") || l.Link != "connected" {
				return fmt.Sprintf("%s sees %s %s %s", n.Addr, l.ID, l.Flags, l.Link)
			}
			if l.HasFlag("slave") {
				replicas++
			}
		}
		if replicas != wantReplicas {
			return fmt.Sprintf("%s sees %d replicas, not %d", n.Addr, replicas, wantReplicas)
		}
	}
	return ""
}

// WaitClusterSettled waits (at most timeout) until clusterSettled holds.
func WaitClusterSettled(t testing.TB, nodes []*ClusterNode, wantReplicas int, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, "the cluster to settle", func() string { return clusterSettled(nodes, wantReplicas) })
}

// WaitFor polls cond (which returns "" when satisfied, else why not) every
// 100 ms for at most timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() string) {
	t.Helper()
	testharness.WaitForReason(t, timeout, 100*time.Millisecond, what, cond)
}
