package node

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-db/shoal/slots"
)

// slotStatKey returns a key that hashes to slot (searching "k<n>" names).
func slotStatKey(t *testing.T, slot int) string {
	t.Helper()
	for i := range 1_000_000 {
		k := "k" + strconv.Itoa(i)
		if int(slots.KeySlot([]byte(k))) == slot {
			return k
		}
	}
	t.Fatalf("no key for slot %d", slot)
	return ""
}

func TestClusterSlotStats(t *testing.T) {
	n := startClusterTestServer(t, "", "--cluster-slot-stats-enabled", "yes", "--cluster-require-full-coverage", "no")
	tc := dialTest(t, n.srv)
	if r := tc.do("CLUSTER", "ADDSLOTSRANGE", "100", "102"); r != "+OK\r\n" {
		t.Fatalf("ADDSLOTSRANGE: %q", r)
	}
	for i := 0; !n.srv.cluster.Slots().Load().OK; i++ {
		if i > 200 {
			t.Fatal("cluster_state never became ok")
		}
		time.Sleep(10 * time.Millisecond)
	}
	k100, k101 := slotStatKey(t, 100), slotStatKey(t, 101)
	// Keys in slot 100 (two) and 101 (one): key-count orders 100, 101, 102.
	for _, k := range []string{k100, "{" + k100 + "}x", k101} {
		if int(slots.KeySlot([]byte(k))) > 101 {
			t.Fatalf("key %s in slot %d", k, slots.KeySlot([]byte(k)))
		}
		if r := tc.do("SET", k, "v"); r != "+OK\r\n" {
			t.Fatalf("SET %s: %q", k, r)
		}
	}
	setIn := func(k string) int { return requestSize([][]byte{[]byte("SET"), []byte(k), []byte("v")}) }
	// SLOTSRANGE: slots of this shard only, ascending; 99 and 103 are not ours.
	r := tc.do("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "99", "103")
	got := parseSlotStats(t, r)
	if len(got) != 3 || got[0].slot != 100 || got[1].slot != 101 || got[2].slot != 102 {
		t.Fatalf("SLOTSRANGE 99 103: %q", r)
	}
	want := []slotStatRow{
		{100, 2, setIn(k100) + setIn("{"+k100+"}x"), 10},
		{101, 1, setIn(k101), 5},
		{102, 0, 0, 0},
	}
	for i, w := range want {
		g := got[i]
		if g.slot != w.slot || g.keys != w.keys || g.in != w.in || g.out != w.out {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
	// ORDERBY key-count DESC (default), LIMIT, ASC with the slot as tie-break.
	if r := parseSlotStats(t, tc.do("CLUSTER", "SLOT-STATS", "ORDERBY", "key-count", "LIMIT", "2")); len(r) != 2 || r[0].slot != 100 || r[1].slot != 101 {
		t.Errorf("ORDERBY key-count LIMIT 2: %+v", r)
	}
	if r := parseSlotStats(t, tc.do("CLUSTER", "SLOT-STATS", "ORDERBY", "KEY-COUNT", "asc")); len(r) != 3 || r[0].slot != 102 || r[2].slot != 100 {
		t.Errorf("ORDERBY key-count ASC: %+v", r)
	}
	if r := parseSlotStats(t, tc.do("CLUSTER", "SLOT-STATS", "ORDERBY", "network-bytes-in", "LIMIT", "1", "DESC")); len(r) != 1 || r[0].slot != 100 {
		t.Errorf("ORDERBY network-bytes-in LIMIT 1 DESC: %+v", r)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ORDERBY", "memory"}, "-ERR Unrecognized sort metric for ORDERBY.\r\n"},
		{[]string{"ORDERBY", "key-count", "LIMIT", "0"}, "-" + msgSlotStatsLimit + "\r\n"},
		{[]string{"ORDERBY", "key-count", "LIMIT", "16385"}, "-" + msgSlotStatsLimit + "\r\n"},
		{[]string{"ORDERBY", "key-count", "LIMIT", "x"}, "-" + msgSlotStatsLimit + "\r\n"},
		{[]string{"ORDERBY", "key-count", "LIMIT"}, "-ERR syntax error\r\n"},
		{[]string{"ORDERBY", "key-count", "ASC", "DESC"}, "-ERR Multiple filters of the same type are disallowed.\r\n"},
		{[]string{"ORDERBY", "key-count", "LIMIT", "1", "LIMIT", "2"}, "-ERR Multiple filters of the same type are disallowed.\r\n"},
		{[]string{"SLOTSRANGE", "5", "1"}, "-ERR Start slot number 5 is greater than end slot number 1\r\n"},
		{[]string{"SLOTSRANGE", "0", "16384"}, "-ERR Invalid or out of range slot\r\n"},
		{[]string{"SLOTSRANGE", "-1", "2"}, "-ERR Invalid or out of range slot\r\n"},
		{[]string{"SLOTSRANGE", "0"}, "-ERR unknown subcommand or wrong number of arguments for 'SLOT-STATS'. Try CLUSTER HELP.\r\n"},
		{[]string{"FOO", "0", "1"}, "-ERR unknown subcommand or wrong number of arguments for 'SLOT-STATS'. Try CLUSTER HELP.\r\n"},
	} {
		if r := tc.do(append([]string{"CLUSTER", "SLOT-STATS"}, c.args...)...); r != c.want {
			t.Errorf("CLUSTER SLOT-STATS %v = %q, want %q", c.args, r, c.want)
		}
	}
	if r := tc.do("CLUSTER", "SLOT-STATS"); r != "-ERR wrong number of arguments for 'cluster|slot-stats' command\r\n" {
		t.Errorf("arity: %q", r)
	}

	// Disabled: only key-count, and only key-count sorts.
	if r := tc.do("CONFIG", "SET", "cluster-slot-stats-enabled", "no"); r != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", r)
	}
	if r := tc.do("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "101", "101"); r != "*1\r\n*2\r\n:101\r\n*2\r\n$9\r\nkey-count\r\n:1\r\n" {
		t.Errorf("disabled SLOTSRANGE: %q", r)
	}
	if r := tc.do("CLUSTER", "SLOT-STATS", "ORDERBY", "cpu-usec"); r != "-ERR Unrecognized sort metric for ORDERBY.\r\n" {
		t.Errorf("disabled ORDERBY cpu-usec: %q", r)
	}
	tc.do("HELLO", "3")
	if r := tc.do("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "101", "101"); r != "*1\r\n*2\r\n:101\r\n%1\r\n$9\r\nkey-count\r\n:1\r\n" {
		t.Errorf("RESP3 SLOTSRANGE: %q", r)
	}
}

func TestClusterSlotStatsStandalone(t *testing.T) {
	tc := dialTest(t, startTestServer(t))
	if r := tc.do("CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "1"); r != "-ERR This instance has cluster support disabled\r\n" {
		t.Fatalf("standalone: %q", r)
	}
}

type slotStatRow struct{ slot, keys, in, out int }

// parseSlotStats reads a RESP2 SLOT-STATS reply with every metric.
func parseSlotStats(t *testing.T, raw string) []slotStatRow {
	t.Helper()
	var rows []slotStatRow
	var n int
	rest := raw
	next := func() string {
		i := 0
		for i < len(rest) && rest[i] != '\n' {
			i++
		}
		line := rest[:i-1]
		rest = rest[i+1:]
		return line
	}
	if _, err := fmt.Sscanf(next(), "*%d", &n); err != nil {
		t.Fatalf("not an array: %q", raw)
	}
	for range n {
		var row slotStatRow
		next() // *2
		fmt.Sscanf(next(), ":%d", &row.slot)
		var m int
		fmt.Sscanf(next(), "*%d", &m)
		for range m / 2 {
			next() // $len
			name := next()
			var v int
			fmt.Sscanf(next(), ":%d", &v)
			switch name {
			case "key-count":
				row.keys = v
			case "network-bytes-in":
				row.in = v
			case "network-bytes-out":
				row.out = v
			}
		}
		rows = append(rows, row)
	}
	return rows
}
