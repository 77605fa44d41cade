package gossip

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

func stopAll(buses []*Bus) {
	var wg sync.WaitGroup
	for _, b := range buses {
		wg.Add(1)
		go func(b *Bus) { defer wg.Done(); _ = b.Stop() }(b)
	}
	wg.Wait()
}

// TestBusFiftyNodesConverge runs 50 buses over an in-memory memberlist
// transport (MemNetwork) in one process: 25 masters claim slot ranges with distinct
// epochs (as redis-cli --cluster create does), 49 nodes MEET node 0, and
// every node must end with the same 50 nodes and the same slot table.
//
// It is a scale test, run without -race (make test's gotest-scale): under
// the race detector 50 buses in one process need several GB and more CPU
// than a loaded 2-core machine gives, their queues overflow and PFAIL never
// clears; the code paths it uses are race-tested by the smaller bus tests.
func TestBusFiftyNodesConverge(t *testing.T) {
	if testing.Short() {
		t.Skip("50-node convergence")
	}
	if testharness.RaceEnabled {
		t.Skip("a scale test: run without -race (make gotest-scale)")
	}
	const n, masters = 50, 25
	// 50 buses under -race in one process on a loaded machine answer late:
	// a node timeout stretched with the test deadlines keeps late PONGs
	// from flagging PFAIL, which the convergence check refuses.
	nodeTimeout := testharness.Slack(15 * time.Second)
	network := &MemNetwork{}
	transports := make([]*MemTransport, n)
	for i := range transports {
		transports[i] = network.NewTransport()
	}
	buses := make([]*Bus, n)
	defer func() { stopAll(buses) }()
	per := slots.Count / masters
	for i := 0; i < n; i++ {
		cport := transports[i].Port()
		opts := DefaultOptions()
		opts.NodeTimeout = nodeTimeout
		b, err := New(Config{Options: opts, IP: "127.0.0.1", Port: 7000 + i, ClusterPort: cport,
			Transport: transports[i], MemberName: fmt.Sprintf("t%d", i), Seed: uint64(i + 1)})
		require.NoError(t, err)
		if i < masters {
			start, end := i*per, (i+1)*per-1
			if i == masters-1 {
				end = slots.Count - 1
			}
			require.NoError(t, b.AddSlotsRange([][]byte{[]byte(strconv.Itoa(start)), []byte(strconv.Itoa(end))}))
			require.NoError(t, b.SetConfigEpoch([]byte(strconv.Itoa(i+1))))
		}
		buses[i] = b
	}
	want := make([]string, slots.Count)
	for s := range want {
		want[s] = buses[0].Slots().Load().OwnerID(s)
		if o := s / per; o < masters {
			want[s] = buses[o].MyID()
		} else {
			want[s] = buses[masters-1].MyID()
		}
	}
	for _, b := range buses {
		require.NoError(t, b.Start())
	}
	first := buses[0].Myself()
	started := time.Now()
	for _, b := range buses[1:] {
		require.NoError(t, b.Meet([]byte(first.IP), []byte(strconv.Itoa(first.Port)), []byte(strconv.Itoa(first.CPort))))
	}
	converged := func() bool {
		for _, b := range buses {
			nodes := b.Nodes()
			if len(nodes) != n {
				return false
			}
			for _, nd := range nodes {
				if nd.Flags&(FlagHandshake|FlagPFail|FlagFail|FlagNoAddr) != 0 {
					return false
				}
			}
			tbl := b.Slots().Load()
			if !tbl.OK {
				return false
			}
			for s := 0; s < slots.Count; s++ {
				if tbl.OwnerID(s) != want[s] {
					return false
				}
			}
		}
		return true
	}
	lastLog := time.Now()
	testharness.WaitFor(t, 90*time.Second, "50 nodes to converge", func() bool {
		if time.Since(lastLog) > 5*time.Second {
			lastLog = time.Now()
			t.Log(clusterSummary(buses, want))
		}
		return converged()
	})
	elapsed := time.Since(started)
	// Identical CLUSTER NODES slot signatures everywhere (what redis-cli checks).
	for _, b := range buses {
		require.Equal(t, slotSignature(buses[0]), slotSignature(b))
	}
	time.Sleep(3 * time.Second) // let the post-convergence burst of first pings pass
	s0 := totalSent(buses)
	window := nodeTimeout // two node-timeout/2 ping periods: the steady-state average
	time.Sleep(window)
	perNode := float64(totalSent(buses)-s0) / n / window.Seconds()
	t.Logf("50 nodes converged in %s; steady-state gossip %.0f bytes/node/s (node-timeout %s)", elapsed.Round(10*time.Millisecond), perNode, nodeTimeout)
	require.True(t, converged())
	// Every memberlist message of a real join and of steady gossip
	// (push/pull, pings, acks, alive, compounds, user messages) passes the
	// bus guard.
	for i, b := range buses {
		require.Zero(t, b.Rejected(), "node %d rejected bus input", i)
	}
}

func totalSent(buses []*Bus) uint64 {
	var s uint64
	for _, b := range buses {
		sent, _, _ := b.Traffic()
		s += sent
	}
	return s
}

// slotSignature is the id → slots part of CLUSTER NODES, sorted.
func slotSignature(b *Bus) string {
	m := map[string]string{}
	for _, n := range b.Nodes() {
		m[n.ID] = n.Slots.String()
	}
	return fmt.Sprint(m)
}

func loopbackBus(t *testing.T, conf string, seed uint64, cport int) *Bus {
	t.Helper()
	opts := DefaultOptions()
	opts.NodeTimeout = 2 * time.Second
	b, err := New(Config{Options: opts, IP: "127.0.0.1", BindAddr: "127.0.0.1", Port: cport - 10000,
		ClusterPort: cport, ConfigFile: conf, Seed: seed, RejoinInterval: time.Second})
	require.NoError(t, err)
	require.NoError(t, b.Start())
	return b
}

// allConnectedOK reports whether every bus is ok and sees all the others
// connected, none in handshake or failing.
func allConnectedOK(buses []*Bus) bool {
	for _, b := range buses {
		if !b.StateOK() || len(b.Nodes()) != len(buses) {
			return false
		}
		for _, n := range b.Nodes() {
			if !n.Connected || n.Flags&(FlagHandshake|FlagPFail|FlagFail) != 0 {
				return false
			}
		}
	}
	return true
}

// TestBusRestartFromNodesConf: a node restarted from its nodes.conf keeps
// its id, epochs and slots and rejoins; restarted at a new address, the
// others recognise it by id and update its address.
func TestBusRestartFromNodesConf(t *testing.T) {
	if testing.Short() {
		t.Skip("real loopback sockets")
	}
	dir := t.TempDir()
	confs := []string{filepath.Join(dir, "a.conf"), filepath.Join(dir, "b.conf"), filepath.Join(dir, "c.conf")}
	var buses [3]*Bus
	for i := range buses {
		buses[i] = loopbackBus(t, confs[i], uint64(i+1), testharness.BusPort(t))
	}
	defer func() { stopAll(buses[:]) }()
	ranges := [][2]string{{"0", "5460"}, {"5461", "10922"}, {"10923", "16383"}}
	for i, b := range buses {
		require.NoError(t, b.AddSlotsRange([][]byte{[]byte(ranges[i][0]), []byte(ranges[i][1])}))
		require.NoError(t, b.SetConfigEpoch([]byte(strconv.Itoa(i+1))))
	}
	a := buses[0].Myself()
	for _, b := range buses[1:] {
		require.NoError(t, b.Meet([]byte("127.0.0.1"), []byte(strconv.Itoa(a.Port)), []byte(strconv.Itoa(a.CPort))))
	}
	allOK := func() bool { return allConnectedOK(buses[:]) }
	testharness.WaitFor(t, 20*time.Second, "3 nodes ok", allOK)

	// The nodes.conf on disk is CLUSTER NODES plus the vars line.
	data, err := os.ReadFile(confs[0])
	require.NoError(t, err)
	require.Regexp(t, `(?m)^[0-9a-f]{40} 127\.0\.0\.1:\d+@\d+ myself,master - 0 \d+ 1 connected 0-5460$`, string(data))
	require.Regexp(t, `(?m)^vars currentEpoch 3 lastVoteEpoch 0\n\z`, string(data))

	// Restart c on the same address: same id, epoch, slots.
	c := buses[2].Myself()
	require.NoError(t, buses[2].Stop())
	buses[2] = loopbackBus(t, confs[2], 99, c.CPort)
	me := buses[2].Myself()
	require.Equal(t, c.ID, me.ID)
	require.Equal(t, c.ConfigEpoch, me.ConfigEpoch)
	require.Equal(t, c.Slots, me.Slots)
	cur, _ := buses[2].Epochs()
	require.Equal(t, uint64(3), cur)
	testharness.WaitFor(t, 20*time.Second, "c back", allOK)

	// Restart c at a new address with the same nodes.conf.
	require.NoError(t, buses[2].Stop())
	newPort := testharness.BusPort(t)
	buses[2] = loopbackBus(t, confs[2], 100, newPort)
	require.Equal(t, c.ID, buses[2].MyID())
	testharness.WaitFor(t, 20*time.Second, "a and b to learn c's new address", func() bool {
		for _, b := range buses[:2] {
			n, ok := b.Node(c.ID)
			if !ok || n.CPort != newPort || !n.Connected || n.Flags&(FlagPFail|FlagFail) != 0 {
				return false
			}
		}
		return len(buses[0].Nodes()) == 3 && len(buses[1].Nodes()) == 3
	})
	// The routing table names the new endpoint.
	require.Equal(t, newPort-10000, buses[0].Slots().Load().Owner(16000).Port)
}

// clusterSummary describes how far a cluster is from convergence.
func clusterSummary(buses []*Bus, want []string) string {
	known, hs, pfail, fail, ok, wrong := 0, 0, 0, 0, 0, 0
	for _, b := range buses {
		for _, nd := range b.Nodes() {
			known++
			if nd.Flags&FlagHandshake != 0 {
				hs++
			}
			if nd.Flags&FlagPFail != 0 {
				pfail++
			}
			if nd.Flags&FlagFail != 0 {
				fail++
			}
		}
		tbl := b.Slots().Load()
		if tbl.OK {
			ok++
		}
		for s := 0; s < slots.Count; s++ {
			if tbl.OwnerID(s) != want[s] {
				wrong++
			}
		}
	}
	_, _, dropped := buses[0].Traffic()
	return fmt.Sprintf("known=%d handshake=%d pfail=%d fail=%d ok=%d wrong-slots=%d dropped0=%d", known, hs, pfail, fail, ok, wrong, dropped)
}

// TestBusNotifiesServer: REPLICATE and slot changes reach OnChange, in
// order, with the master's client address; the lock-free table follows.
func TestBusNotifiesServer(t *testing.T) {
	network := &MemNetwork{}
	var mu sync.Mutex
	var changes []Change
	buses := make([]*Bus, 2)
	defer func() { stopAll(buses) }()
	for i := range buses {
		tr := network.NewTransport()
		cfg := Config{Options: DefaultOptions(), IP: "127.0.0.1", Port: 7100 + i, ClusterPort: tr.Port(),
			Transport: tr, Seed: uint64(40 + i)}
		if i == 1 {
			cfg.OnChange = func(c Change) { mu.Lock(); changes = append(changes, c); mu.Unlock() }
		}
		b, err := New(cfg)
		require.NoError(t, err)
		require.NoError(t, b.Start())
		buses[i] = b
	}
	a, b := buses[0], buses[1]
	require.NoError(t, a.AddSlotsRange(args("0 16383")))
	me := a.Myself()
	require.NoError(t, b.Meet([]byte("127.0.0.1"), []byte(strconv.Itoa(me.Port)), []byte(strconv.Itoa(me.CPort))))
	testharness.WaitFor(t, 20*time.Second, "b to see a's slots", func() bool { return b.Slots().Load().OwnerID(0) == a.MyID() })
	require.NoError(t, b.Replicate(a.MyID(), true))
	testharness.WaitFor(t, 10*time.Second, "role change notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range changes {
			if c.RoleChanged && c.MasterID == a.MyID() {
				require.Equal(t, "127.0.0.1", c.MasterIP)
				require.Equal(t, 7100, c.MasterPort)
				return true
			}
		}
		return false
	})
	require.Equal(t, a.MyID(), b.Slots().Load().MyMaster)
	testharness.WaitFor(t, 10*time.Second, "a to see b as its replica", func() bool {
		n, ok := a.Node(b.MyID())
		return ok && n.IsReplica() && n.Master == a.MyID()
	})
	// RESET of the replica: master again, data to be flushed, alone.
	require.NoError(t, b.Reset(false, false))
	testharness.WaitFor(t, 10*time.Second, "reset notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		last := changes[len(changes)-1]
		return last.FlushData && last.RoleChanged && last.MasterID == ""
	})
	require.Len(t, b.Nodes(), 1)
}
