package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
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
	self := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	nodes, err := clusterNodesOf(self)
	if err != nil {
		fmt.Fprintf(stdout, "prestop: %v; nothing to hand over\n", err)
		return 0
	}
	me, ok := nodes.myself()
	if !ok || !me.hasFlag("master") || len(me.slots) == 0 {
		fmt.Fprintln(stdout, "prestop: not a master serving slots; nothing to hand over")
		return 0
	}
	var replicaAddr string
	for _, n := range nodes {
		if n.master == me.id && n.link == "connected" && !n.hasFlag("fail") && !n.hasFlag("fail?") {
			replicaAddr = n.addr
			break
		}
	}
	if replicaAddr == "" {
		fmt.Fprintln(stdout, "prestop: no connected replica; stopping without a failover")
		return 0
	}
	reply, err := roundTrip(replicaAddr, "CLUSTER", "FAILOVER")
	if err != nil || reply != "OK" {
		fmt.Fprintf(stdout, "prestop: CLUSTER FAILOVER on %s: %q %v; stopping without a failover\n", replicaAddr, reply, err)
		return 0
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		time.Sleep(prestopPoll)
		nodes, err := clusterNodesOf(self)
		if err != nil {
			continue
		}
		if me, ok := nodes.myself(); ok && me.hasFlag("slave") {
			fmt.Fprintf(stdout, "prestop: %s took over the slots\n", replicaAddr)
			return 0
		}
	}
	fmt.Fprintf(stdout, "prestop: still a master after %v; stopping anyway\n", timeout)
	return 0
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

func clusterNodesOf(addr string) (nodeLines, error) {
	text, err := roundTrip(addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
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
	return out, nil
}

// roundTrip sends one command (after AUTH when SHOAL_PASSWORD is set) and
// returns a status or bulk reply as text, an error reply as an error.
func roundTrip(addr string, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, prestopDialTimeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(prestopIOTimeout))
	r := bufio.NewReader(c)
	if pw := os.Getenv("SHOAL_PASSWORD"); pw != "" {
		if _, err := c.Write(encodeRequest("AUTH", pw)); err != nil {
			return "", err
		}
		if _, err := readSimpleReply(r); err != nil {
			return "", err
		}
	}
	if _, err := c.Write(encodeRequest(args...)); err != nil {
		return "", err
	}
	return readSimpleReply(r)
}

func encodeRequest(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// readSimpleReply reads a +status, -error, :integer or $bulk reply.
func readSimpleReply(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < -1 || n > prestopMaxReply {
			return "", fmt.Errorf("bad bulk length %q", line)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}
