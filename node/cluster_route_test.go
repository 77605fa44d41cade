package node

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// Routing during a slot migration (SETSLOT MIGRATING/IMPORTING/NODE), byte
// for byte against two real redis-server 7.0 cluster masters: ASK for keys
// missing on the migrating node, TRYAGAIN for partly present multi-key
// requests, ASKING for one command (kept through MULTI), MOVED after the
// flip, open slots in CLUSTER NODES, and a client blocked on a key whose
// slot leaves answered MOVED.

// migrationTag returns a hash tag whose slot is below 8192 (served by the
// first master of formMasters).
func migrationTag() (string, int) {
	for i := 0; ; i++ {
		tag := "t" + strconv.Itoa(i)
		if s := int(slots.KeySlot([]byte("{" + tag + "}"))); s < 8192 {
			return tag, s
		}
	}
}

// formMasters joins two empty masters: a serves slots 0-8191 (epoch 1), b
// 8192-16383 (epoch 2).
func formMasters(t *testing.T, ac, bc *testConn, aPort, aCPort int, aID, bID string) {
	t.Helper()
	require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "SET-CONFIG-EPOCH", "1"))
	require.Equal(t, "+OK\r\n", bc.do("CLUSTER", "SET-CONFIG-EPOCH", "2"))
	require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "ADDSLOTSRANGE", "0", "8191"))
	require.Equal(t, "+OK\r\n", bc.do("CLUSTER", "ADDSLOTSRANGE", "8192", "16383"))
	require.Equal(t, "+OK\r\n", bc.do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(aPort), strconv.Itoa(aCPort)))
	testharness.WaitFor(t, 15*time.Second, "both masters to see the whole slot map", func() bool {
		for _, c := range []*testConn{ac, bc} {
			info := bulkBody(t, c.do("CLUSTER", "INFO"))
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:2") {
				return false
			}
		}
		return true
	})
}

func TestClusterMigrationRoutingMatchesRedis(t *testing.T) {
	tag, slot := migrationTag()
	k := func(name string) string { return "{" + tag + "}" + name }
	type side struct {
		a, a2, b *testConn
		aID, bID string
		norm     func(string) string
	}
	build := func(aAddr, bAddr string, aPort, aCPort, bPort, bCPort int) *side {
		sd := &side{a: dialTestAddr(t, aAddr), a2: dialTestAddr(t, aAddr), b: dialTestAddr(t, bAddr)}
		sd.aID = bulkBody(t, sd.a.do("CLUSTER", "MYID"))
		sd.bID = bulkBody(t, sd.b.do("CLUSTER", "MYID"))
		formMasters(t, sd.a, sd.b, aPort, aCPort, sd.aID, sd.bID)
		sd.norm = normalizer(sd.aID, "<A>", sd.bID, "<B>", strconv.Itoa(aCPort), "<ACPORT>",
			strconv.Itoa(bCPort), "<BCPORT>", strconv.Itoa(aPort), "<APORT>", strconv.Itoa(bPort), "<BPORT>")
		return sd
	}
	r1, r1p, r1c := startRealClusterRedis(t)
	r2, r2p, r2c := startRealClusterRedis(t)
	o1 := startClusterTestServer(t, "")
	o2 := startClusterTestServer(t, "")
	real := build(r1, r2, r1p, r1c, r2p, r2c)
	ours := build(o1.addr, o2.addr, o1.port, o1.cport, o2.port, o2.cport)

	s := strconv.Itoa(slot)
	type step struct {
		on   string // a, a2 or b
		cmd  []string
		want string // the reply's prefix, when it says what the step shows
	}
	script := []step{
		{"a", []string{"SET", k("x"), "1"}, ""},
		{"a", []string{"RPUSH", k("list"), "e"}, ""},
		{"b", []string{"CLUSTER", "SETSLOT", s, "IMPORTING", "<a>"}, ""},
		{"a", []string{"CLUSTER", "SETSLOT", s, "MIGRATING", "<b>"}, ""},
		// The migrating node: present keys are served, missing ones ASK.
		{"a", []string{"GET", k("x")}, ""},
		{"a", []string{"GET", k("missing")}, "-ASK "},
		{"a", []string{"SET", k("new"), "v"}, ""},
		{"a", []string{"MGET", k("x"), k("missing")}, "-TRYAGAIN"},
		{"a", []string{"MGET", k("missing"), k("other")}, ""},
		{"a", []string{"MGET", k("x"), k("x")}, ""},
		{"a", []string{"EXISTS", k("x"), k("list")}, ""},
		{"a", []string{"ASKING"}, ""},
		{"a", []string{"GET", k("missing")}, ""},
		{"a", []string{"MULTI"}, ""},
		{"a", []string{"GET", k("missing")}, ""},
		{"a", []string{"GET", k("x")}, ""},
		{"a", []string{"EXEC"}, ""},
		{"a", []string{"MULTI"}, ""},
		{"a", []string{"GET", k("x")}, ""},
		{"a", []string{"EXEC"}, ""},
		// The importing node: MOVED without ASKING; ASKING serves one command.
		{"b", []string{"GET", k("x")}, "-MOVED "},
		{"b", []string{"ASKING"}, ""},
		{"b", []string{"GET", k("x")}, "$-1"},
		{"b", []string{"GET", k("x")}, "-MOVED "},
		{"b", []string{"ASKING"}, ""},
		{"b", []string{"SET", k("x"), "moved"}, ""},
		{"b", []string{"ASKING"}, ""},
		{"b", []string{"MGET", k("x"), k("missing")}, "-TRYAGAIN"},
		{"b", []string{"ASKING"}, ""},
		{"b", []string{"MGET", k("x"), k("x")}, ""},
		{"b", []string{"ASKING"}, ""},
		{"b", []string{"PING"}, ""},
		{"b", []string{"GET", k("x")}, ""},
		{"b", []string{"ASKING"}, ""},
		{"b", []string{"MULTI"}, ""},
		{"b", []string{"GET", k("x")}, ""},
		{"b", []string{"INCR", k("n")}, ""},
		{"b", []string{"EXEC"}, "-TRYAGAIN"},
		{"b", []string{"ASKING"}, ""},
		{"b", []string{"MULTI"}, ""},
		{"b", []string{"GET", k("x")}, ""},
		{"b", []string{"APPEND", k("x"), "!"}, ""},
		{"b", []string{"EXEC"}, "*2"},
		{"b", []string{"GET", k("x")}, ""},
		{"b", []string{"MULTI"}, ""},
		{"b", []string{"GET", k("x")}, ""},
		{"b", []string{"EXEC"}, ""},
		// The source empties the slot (as MIGRATE would), then the flip.
		{"a", []string{"DEL", k("x"), k("list")}, ""},
		{"a", []string{"CLUSTER", "COUNTKEYSINSLOT", s}, ""},
		{"b", []string{"CLUSTER", "COUNTKEYSINSLOT", s}, ""},
		{"b", []string{"CLUSTER", "SETSLOT", s, "NODE", "<b>"}, ""},
		{"a", []string{"CLUSTER", "SETSLOT", s, "NODE", "<b>"}, ""},
		{"a", []string{"GET", k("x")}, "-MOVED "},
		{"a", []string{"ASKING"}, ""},
		{"a", []string{"GET", k("x")}, ""},
		{"b", []string{"GET", k("x")}, "$6"},
		{"b", []string{"GET", k("n")}, ""},
	}
	run := func(sd *side, st step) string {
		args := make([]string, len(st.cmd))
		for i, a := range st.cmd {
			args[i] = strings.NewReplacer("<a>", sd.aID, "<b>", sd.bID).Replace(a)
		}
		switch st.on {
		case "a":
			return sd.a.do(args...)
		case "a2":
			return sd.a2.do(args...)
		}
		return sd.b.do(args...)
	}
	for i, st := range script {
		want, got := run(real, st), run(ours, st)
		require.Equal(t, renderReply(testharness.ParseReply(t, want), real.norm), renderReply(testharness.ParseReply(t, got), ours.norm),
			"step %d on %s %q\nredis: %q\nshoal: %q", i, st.on, st.cmd, want, got)
		require.True(t, strings.HasPrefix(got, st.want), "step %d %q: %q does not start with %q", i, st.cmd, got, st.want)
		if strings.Contains(st.cmd[len(st.cmd)-1], "<b>") && st.cmd[3] == "MIGRATING" {
			// The open slot on the myself line of CLUSTER NODES.
			for _, sd := range []*side{real, ours} {
				nodes := bulkBody(t, sd.a.do("CLUSTER", "NODES"))
				require.Contains(t, nodes, fmt.Sprintf("[%d->-%s]", slot, sd.bID))
				nodes = bulkBody(t, sd.b.do("CLUSTER", "NODES"))
				require.Contains(t, nodes, fmt.Sprintf("[%d-<-%s]", slot, sd.aID))
			}
		}
	}
	for _, sd := range []*side{real, ours} {
		require.NotContains(t, bulkBody(t, sd.a.do("CLUSTER", "NODES")), "[")
		require.NotContains(t, bulkBody(t, sd.b.do("CLUSTER", "NODES")), "[")
	}
}

// TestClusterBlockedClientMovedWhenSlotLeaves: a client blocked on a key
// is answered MOVED once the key's slot is given to another node (Redis
// does it from clientsCron; shoal as soon as the slot table changes).
func TestClusterBlockedClientMovedWhenSlotLeaves(t *testing.T) {
	tag, slot := migrationTag()
	key := "{" + tag + "}q"
	for _, real := range []bool{true, false} {
		var aAddr, bAddr string
		var aPort, aCPort, bPort int
		if real {
			aAddr, aPort, aCPort = startRealClusterRedis(t)
			bAddr, bPort, _ = startRealClusterRedis(t)
		} else {
			a, b := startClusterTestServer(t, ""), startClusterTestServer(t, "")
			aAddr, aPort, aCPort, bAddr, bPort = a.addr, a.port, a.cport, b.addr, b.port
		}
		ac, blocked, bc := dialTestAddr(t, aAddr), dialTestAddr(t, aAddr), dialTestAddr(t, bAddr)
		aID, bID := bulkBody(t, ac.do("CLUSTER", "MYID")), bulkBody(t, bc.do("CLUSTER", "MYID"))
		formMasters(t, ac, bc, aPort, aCPort, aID, bID)
		blocked.send("BLPOP", key, "10")
		testharness.WaitFor(t, 5*time.Second, "the client to block", func() bool {
			return strings.Contains(bulkBody(t, ac.do("INFO", "clients")), "blocked_clients:1")
		})
		require.Equal(t, "+OK\r\n", bc.do("CLUSTER", "SETSLOT", strconv.Itoa(slot), "NODE", bID))
		require.Equal(t, "+OK\r\n", ac.do("CLUSTER", "SETSLOT", strconv.Itoa(slot), "NODE", bID))
		start := time.Now()
		require.Equal(t, fmt.Sprintf("-MOVED %d 127.0.0.1:%d\r\n", slot, bPort), blocked.read(), "real redis: %v", real)
		require.Less(t, time.Since(start), 5*time.Second)
	}
}

// TestClusterRestoreAskingMatchesRedis: RESTORE-ASKING (the asking flag)
// is served on an importing slot without ASKING, RESTORE is redirected.
func TestClusterRestoreAskingMatchesRedis(t *testing.T) {
	tag, slot := migrationTag()
	key := "{" + tag + "}r"
	run := func(aAddr, bAddr string, aPort, aCPort, bPort int) []string {
		ac, bc := dialTestAddr(t, aAddr), dialTestAddr(t, bAddr)
		aID, bID := bulkBody(t, ac.do("CLUSTER", "MYID")), bulkBody(t, bc.do("CLUSTER", "MYID"))
		formMasters(t, ac, bc, aPort, aCPort, aID, bID)
		norm := strings.NewReplacer(strconv.Itoa(aPort), "<APORT>", strconv.Itoa(bPort), "<BPORT>")
		var out []string
		add := func(r string) { out = append(out, norm.Replace(r)) }
		add(ac.do("SET", key, "payload-value"))
		payload := bulkBody(t, ac.do("DUMP", key))
		add(bc.do("CLUSTER", "SETSLOT", strconv.Itoa(slot), "IMPORTING", aID))
		add(bc.do("RESTORE", key, "0", payload))
		add(bc.do("RESTORE-ASKING", key, "0", payload))
		add(bc.do("RESTORE-ASKING", key, "0", payload))
		add(bc.do("ASKING"))
		add(bc.do("GET", key))
		add(bc.do("GET", key))
		return out
	}
	r1, r1p, r1c := startRealClusterRedis(t)
	r2, r2p, _ := startRealClusterRedis(t)
	o1, o2 := startClusterTestServer(t, ""), startClusterTestServer(t, "")
	want := run(r1, r2, r1p, r1c, r2p)
	got := run(o1.addr, o2.addr, o1.port, o1.cport, o2.port)
	require.Equal(t, want, got)
	require.Equal(t, "+OK\r\n", got[3], "RESTORE-ASKING on the importing node")
	require.True(t, strings.HasPrefix(got[2], "-MOVED"), got[2])
	require.True(t, strings.HasPrefix(got[4], "-BUSYKEY"), got[4])
}
