package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/resp"
	"go.uber.org/zap"
)

// `shoal-server --prestop [port [timeout-seconds]]` is the Kubernetes preStop
// hook of deploy/k8s (the image has no shell and no redis-cli): when the node
// on 127.0.0.1:port (default 6379) is a cluster master serving slots with a
// connected replica, it asks that replica for CLUSTER FAILOVER and waits
// until this node has become a replica (at most timeout, default 30 s), so
// that the pod stops after its slots moved and no acknowledged write is
// lost. It exits 0 whenever waiting cannot help (standalone, already a
// replica, no replica, the command refused), so it never holds a pod
// longer than its grace period. SHOAL_PASSWORD, when set, is sent with AUTH.

const (
	prestopDialTimeout = 2 * time.Second
	prestopIOTimeout   = 5 * time.Second
	prestopPoll        = 200 * time.Millisecond
	// prestopRetry is how long a CLUSTER FAILOVER is given before it is
	// asked again: more than a manual failover's own 5 s timeout, so that a
	// retry never cuts a running one short.
	prestopRetry = 6 * time.Second
	// prestopMaxReply bounds what is read from the server (CLUSTER NODES of
	// a large cluster fits easily).
	prestopMaxReply = 16 << 20
)

func prestop(args []string, stdout, stderr io.Writer) int {
	port, timeout := 6379, 30*time.Second
	if len(args) > 0 {
		p, err := strconv.Atoi(args[0])
		if err != nil || p <= 0 || p > 65535 {
			fmt.Fprintf(stderr, "prestop: invalid port %q\n", args[0])
			return 1
		}
		port = p
	}
	if len(args) > 1 {
		s, err := strconv.Atoi(args[1])
		if err != nil || s <= 0 {
			fmt.Fprintf(stderr, "prestop: invalid timeout %q\n", args[1])
			return 1
		}
		timeout = time.Duration(s) * time.Second
	}
	fmt.Fprintln(stdout, "prestop: "+handOver(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), os.Getenv("SHOAL_PASSWORD"), timeout))
	return 0
}

// handOver moves the slots of the master at self to one of its connected
// replicas (CLUSTER FAILOVER sent to the replica) and waits at most timeout
// until self is a replica. It returns what happened, for the log; it never
// fails: a node that cannot hand over stops as it would have anyway.
func handOver(self, password string, timeout time.Duration) string {
	nodes, err := clusterNodesOf(self, password)
	if err != nil {
		return fmt.Sprintf("%v; nothing to hand over", err)
	}
	me, ok := nodes.myself()
	if !ok || !me.hasFlag("master") || len(me.slots) == 0 {
		return "not a master serving slots; nothing to hand over"
	}
	var replicaAddr string
	for _, n := range nodes {
		if n.master == me.id && n.link == "connected" && !n.hasFlag("fail") && !n.hasFlag("fail?") {
			replicaAddr = n.addr
			break
		}
	}
	if replicaAddr == "" {
		return "no connected replica; stopping without a failover"
	}
	reply, err := roundTrip(replicaAddr, password, "CLUSTER", "FAILOVER")
	if err != nil || reply != "OK" {
		return fmt.Sprintf("CLUSTER FAILOVER on %s: %q %v; stopping without a failover", replicaAddr, reply, err)
	}
	deadline := time.Now().Add(timeout)
	asked, attempts := time.Now(), 1
	for time.Now().Before(deadline) {
		time.Sleep(prestopPoll)
		nodes, err := clusterNodesOf(self, password)
		if err != nil {
			continue
		}
		if me, ok := nodes.myself(); ok && me.hasFlag("slave") {
			return fmt.Sprintf("%s took over the slots (attempt %d)", replicaAddr, attempts)
		}
		// A manual failover that has not completed within its own timeout
		// (5 s) was abandoned, e.g. because the masters had only just
		// started and do not vote yet: ask again.
		if time.Since(asked) >= prestopRetry && time.Until(deadline) > prestopPoll {
			if _, err := roundTrip(replicaAddr, password, "CLUSTER", "FAILOVER"); err == nil {
				attempts++
			}
			asked = time.Now()
		}
	}
	return fmt.Sprintf("still a master after %v (%d attempts); stopping anyway", timeout, attempts)
}

// nodeLine is one CLUSTER NODES line.
type nodeLine struct {
	id, addr, flags, master, link string
	slots                         []string
}

func (n nodeLine) hasFlag(f string) bool {
	for _, x := range strings.Split(n.flags, ",") {
		if x == f {
			return true
		}
	}
	return false
}

type nodeLines []nodeLine

func (ns nodeLines) myself() (nodeLine, bool) {
	for _, n := range ns {
		if n.hasFlag("myself") {
			return n, true
		}
	}
	return nodeLine{}, false
}

func clusterNodesOf(addr, password string) (nodeLines, error) {
	text, err := roundTrip(addr, password, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	return parseNodeLines(text), nil
}

// parseNodeLines reads a CLUSTER NODES body.
func parseNodeLines(text string) nodeLines {
	var out nodeLines
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		// ip:port@cport[,hostname] → ip:port
		a := f[1]
		if i := strings.IndexAny(a, "@,"); i >= 0 {
			a = a[:i]
		}
		out = append(out, nodeLine{id: f[0], addr: a, flags: f[2], master: f[3], link: f[7], slots: f[8:]})
	}
	return out
}

// roundTrip sends one command (after AUTH when password is not empty) and
// returns a status or bulk reply as text, an error reply as an error.
func roundTrip(addr, password string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, prestopDialTimeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(prestopIOTimeout))
	r := resp.NewReplyReader(c, 4096)
	if password != "" {
		if _, err := c.Write(resp.AppendCommand(nil, "AUTH", password)); err != nil {
			return "", err
		}
		if _, err := r.ReadText(prestopMaxReply); err != nil {
			return "", err
		}
	}
	if _, err := c.Write(resp.AppendCommand(nil, args...)); err != nil {
		return "", err
	}
	return r.ReadText(prestopMaxReply)
}

// handOverOnShutdown runs before a signalled shutdown when
// cluster-failover-on-shutdown is set (seconds, 0 = off): a master serving
// slots hands them to a replica first, so that a plain `docker stop` or
// `docker compose restart` loses no acknowledged write (a Kubernetes pod
// does the same in its preStop hook, before the signal).
func handOverOnShutdown(cfg *config.Config, log *zap.Logger) {
	secs := cfg.Int("cluster-failover-on-shutdown")
	if secs <= 0 || !cfg.Bool("cluster-enabled") {
		return
	}
	host := "127.0.0.1"
	for _, b := range cfg.Strings("bind") {
		b = strings.TrimPrefix(b, "-")
		if ip := net.ParseIP(b); ip != nil && !ip.IsUnspecified() {
			host = ip.String()
			break
		}
	}
	self := net.JoinHostPort(host, strconv.FormatInt(cfg.Int("port"), 10))
	start := time.Now()
	what := handOver(self, cfg.String("requirepass"), time.Duration(secs)*time.Second)
	log.Warn("cluster-failover-on-shutdown: "+what, zap.Duration("took", time.Since(start)))
}
