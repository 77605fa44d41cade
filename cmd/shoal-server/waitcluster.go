package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-db/shoal/slots"
)

// `shoal-server --wait-cluster host:port[,host:port...] [timeout-seconds]`
// waits until the cluster accepts writes: every listed node reports
// cluster_state:ok and every master serving slots (in the first node's
// view) accepts a write to one of its own slots (SET with a 10 s TTL, then
// DEL). It exits 0 then, 1 when timeout (default 60 s) passes first, saying
// why not. A node answering cluster_state:ok is not enough: right after the
// cluster forms, a master can still refuse writes for a moment. The compose
// files run it as each node's healthcheck (`docker compose up -d --wait`)
// and as the one-shot `ready` service (`docker-compose run --rm ready`);
// the image has no shell and no redis-cli. SHOAL_PASSWORD, when set, is
// sent with AUTH.

const waitClusterPoll = 250 * time.Millisecond

func waitCluster(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 || len(args) > 2 {
		fmt.Fprintln(stderr, "usage: shoal-server --wait-cluster host:port[,host:port...] [timeout-seconds]")
		return 1
	}
	addrs := strings.FieldsFunc(args[0], func(r rune) bool { return r == ',' })
	if len(addrs) == 0 {
		fmt.Fprintln(stderr, "wait-cluster: no address")
		return 1
	}
	timeout := 60 * time.Second
	if len(args) == 2 {
		s, err := strconv.Atoi(args[1])
		if err != nil || s <= 0 {
			fmt.Fprintf(stderr, "wait-cluster: invalid timeout %q\n", args[1])
			return 1
		}
		timeout = time.Duration(s) * time.Second
	}
	password := os.Getenv("SHOAL_PASSWORD")
	deadline := time.Now().Add(timeout)
	why := ""
	for {
		if why = clusterWritable(addrs, password); why == "" {
			fmt.Fprintf(stdout, "wait-cluster: %d nodes ok, every master accepted a write\n", len(addrs))
			return 0
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "wait-cluster: not writable after %v: %s\n", timeout, why)
			return 1
		}
		time.Sleep(waitClusterPoll)
	}
}

// clusterWritable returns "" when the cluster accepts writes, else why not.
func clusterWritable(addrs []string, password string) string {
	for _, a := range addrs {
		info, err := roundTrip(a, password, "CLUSTER", "INFO")
		if err != nil {
			return fmt.Sprintf("%s: %v", a, err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return a + ": cluster_state is not ok"
		}
	}
	nodes, err := clusterNodesOf(addrs[0], password)
	if err != nil {
		return fmt.Sprintf("%s: %v", addrs[0], err)
	}
	masters := 0
	for _, n := range nodes {
		if !n.hasFlag("master") || len(n.slots) == 0 {
			continue
		}
		first, last, ok := firstSlotRange(n.slots)
		if !ok {
			continue
		}
		masters++
		key := keyInSlotRange("shoal-wait-cluster:", first, last)
		if reply, err := roundTrip(n.addr, password, "SET", key, "1", "PX", "10000"); err != nil || reply != "OK" {
			return fmt.Sprintf("master %s refused a write to slot %d: %q %v", n.addr, slots.KeySlot([]byte(key)), reply, err)
		}
		_, _ = roundTrip(n.addr, password, "DEL", key)
	}
	if masters == 0 {
		return "no master serves slots"
	}
	return ""
}

// firstSlotRange reads the first "a-b" or "a" entry of a CLUSTER NODES
// line's slots ("[...]" migration entries are skipped).
func firstSlotRange(fields []string) (first, last int, ok bool) {
	for _, f := range fields {
		if strings.HasPrefix(f, "[") {
			continue
		}
		a, b, isRange := strings.Cut(f, "-")
		x, err := strconv.Atoi(a)
		if err != nil {
			continue
		}
		y := x
		if isRange {
			if y, err = strconv.Atoi(b); err != nil {
				continue
			}
		}
		return x, y, true
	}
	return 0, 0, false
}

// keyInSlotRange returns prefix+n for the smallest n whose slot is in
// [first, last] (a range of one slot takes about 16384 tries: still fast).
func keyInSlotRange(prefix string, first, last int) string {
	for n := 0; ; n++ {
		k := prefix + strconv.Itoa(n)
		if s := int(slots.KeySlot([]byte(k))); s >= first && s <= last {
			return k
		}
	}
}
