package gossip

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/stretchr/testify/require"
)

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

// TestCommandErrorsMatchRedis replays a session whose replies were taken
// from redis-server 7.0.15 (cluster-enabled, one fresh node on port 7391).
func TestCommandErrorsMatchRedis(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	s := NewState(DefaultOptions(), clk, 7, nil, "", "127.0.0.1", 7391, 17391, "")
	steps := []struct {
		run  func() error
		want string
	}{
		{func() error { return s.AddSlots(args("5 5")) }, "ERR Slot 5 specified multiple times"},
		{func() error { return s.AddSlots(args("99999")) }, "ERR Invalid or out of range slot"},
		{func() error { return s.AddSlots(args("x")) }, "ERR Invalid or out of range slot"},
		{func() error { return s.AddSlots(args("1 x")) }, "ERR Invalid or out of range slot"},
		{func() error { return s.AddSlotsRange(args("1 2 3")) }, "ERR wrong number of arguments for 'cluster|addslotsrange' command"},
		{func() error { return s.AddSlotsRange(args("5 1")) }, "ERR start slot number 5 is greater than end slot number 1"},
		{func() error { return s.AddSlotsRange(args("1 10")) }, ""},
		{func() error { return s.AddSlots(args("5")) }, "ERR Slot 5 is already busy"},
		{func() error { return s.DelSlots(args("20")) }, "ERR Slot 20 is already unassigned"},
		{func() error { return s.DelSlotsRange(args("1 3 2 4")) }, "ERR Slot 2 specified multiple times"},
		{func() error { return s.SetConfigEpoch([]byte("-1")) }, "ERR Invalid config epoch specified: -1"},
		{func() error { return s.SetConfigEpoch([]byte("x")) }, "ERR value is not an integer or out of range"},
		{func() error { return s.SetConfigEpoch([]byte("5")) }, ""},
		{func() error { return s.SetConfigEpoch([]byte("6")) }, "ERR Node config epoch is already non-zero"},
		{func() error { return s.Meet([]byte("1.2.3"), []byte("7000"), nil) }, "ERR Invalid node address specified: 1.2.3:7000"},
		{func() error { return s.Meet([]byte("127.0.0.1"), []byte("x"), nil) }, "ERR Invalid TCP base port specified: x"},
		{func() error { return s.Meet([]byte("127.0.0.1"), []byte("70000"), nil) }, "ERR Invalid node address specified: 127.0.0.1:70000"},
		{func() error { return s.Meet([]byte("127.0.0.1"), []byte("7000"), []byte("x")) }, "ERR Invalid TCP bus port specified: x"},
		{func() error { return s.Forget("abc") }, "ERR Unknown node abc"},
		{func() error { return s.Replicate("abc", true) }, "ERR Unknown node abc"},
		{func() error { _, err := s.CountFailureReports("abc"); return err }, "ERR Unknown node abc"},
		{func() error { return s.SetSlot(args("1 migrating abc"), nil) }, "ERR I don't know about node abc"},
		{func() error { return s.SetSlot(args("100 migrating abc"), nil) }, "ERR I'm not the owner of hash slot 100"},
		{func() error { return s.SetSlot(args("1 importing abc"), nil) }, "ERR I'm already the owner of hash slot 1"},
		{func() error { return s.SetSlot(args("1 foo"), nil) }, "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"},
		{func() error { return s.SetSlot(args("1 node abc"), nil) }, "ERR Unknown node abc"},
		{func() error { _, err := s.Replicas("abc"); return err }, "ERR Unknown node abc"},
		{func() error { return s.FlushSlots(false) }, "ERR DB must be empty to perform CLUSTER FLUSHSLOTS."},
	}
	for i, st := range steps {
		err := st.run()
		if st.want == "" {
			require.NoError(t, err, "step %d", i)
		} else {
			require.EqualError(t, err, st.want, "step %d", i)
		}
	}
	require.Equal(t, "STILL 5", s.BumpEpoch())
	// Redis computes cluster_size only once a master is past its 2 s
	// writable delay; the reference session ran longer than that.
	clk.Advance(3 * time.Second)
	s.Tick()
	require.Equal(t, s.MyID()+" 127.0.0.1:7391@17391 myself,master - 0 0 5 connected 1-10\n", s.NodesText())
	require.Equal(t, "cluster_state:fail\r\n"+
		"cluster_slots_assigned:10\r\ncluster_slots_ok:10\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\n"+
		"cluster_known_nodes:1\r\ncluster_size:1\r\ncluster_current_epoch:5\r\ncluster_my_epoch:5\r\n"+
		"cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n"+
		"total_cluster_links_buffer_limit_exceeded:0\r\n", s.InfoText())

	// Meeting someone makes SET-CONFIG-EPOCH refuse (handshake nodes count).
	s2 := NewState(DefaultOptions(), clk, 8, nil, "", "127.0.0.1", 7392, 17392, "")
	require.NoError(t, s2.Meet([]byte("127.0.0.1"), []byte("7391"), nil))
	require.EqualError(t, s2.SetConfigEpoch([]byte("1")),
		"ERR The user can assign a config epoch only when the node does not know any other node.")
	require.Equal(t, "BUMPED 1", s2.BumpEpoch())
	require.Equal(t, "STILL 1", s2.BumpEpoch())
}

func TestNodesTextMarksAndFlagsOrder(t *testing.T) {
	sm := newSim(t, 3, testOpts())
	sm.meetAll()
	sm.run(3 * time.Second)
	a, b, c := sm.nodes[0], sm.nodes[1], sm.nodes[2]
	require.NoError(t, a.AddSlots(args("0 1 2 3 7 16383")))
	sm.run(time.Second)
	require.NoError(t, a.SetSlot(args("3 migrating "+b.MyID()), nil))
	require.NoError(t, a.SetSlot(args("9 importing "+c.MyID()), nil))
	line, _ := a.NodeLine(a.MyID())
	require.True(t, strings.HasSuffix(line, " connected 0-3 7 16383 [3->-"+b.MyID()+"] [9-<-"+c.MyID()+"]"), line)
	// Marks appear only on the myself line.
	other, _ := b.NodeLine(a.MyID())
	require.NotContains(t, other, "[")
	tbl := a.Ready().Table
	require.Equal(t, b.MyID(), tbl.Migrating(3))
	require.Equal(t, c.MyID(), tbl.Importing(9))

	// SETSLOT NODE to myself while importing bumps the epoch.
	before := a.Myself().ConfigEpoch
	require.NoError(t, a.SetSlot(args("9 node "+a.MyID()), nil))
	require.Greater(t, a.Myself().ConfigEpoch, before)
	require.Empty(t, a.Ready().Table.Importing(9))
	// Giving a slot away while holding keys is refused.
	require.EqualError(t, a.SetSlot(args("7 node "+b.MyID()), func(int) int { return 3 }),
		"ERR Can't assign hashslot 7 to a different node while I still hold keys for this hash slot.")

	require.Equal(t, "myself,master,slave,fail?,fail,handshake,noaddr,nofailover",
		(FlagMyself | FlagMaster | FlagSlave | FlagPFail | FlagFail | FlagHandshake | FlagNoAddr | FlagNoFailover | FlagMeet | FlagMigrateTo).String())
	require.Equal(t, "noflags", Flags(0).String())
}

func TestNodesConfRoundTrip(t *testing.T) {
	sm := newSim(t, 3, testOpts())
	sm.meetAll()
	sm.run(3 * time.Second)
	a, b, c := sm.nodes[0], sm.nodes[1], sm.nodes[2]
	require.NoError(t, a.AddSlotsRange(args("0 8000")))
	require.NoError(t, c.AddSlotsRange(args("8001 16383")))
	require.NoError(t, b.Replicate(a.MyID(), true))
	sm.run(3 * time.Second)
	require.NoError(t, a.SetSlot(args("5 migrating "+c.MyID()), nil))
	a.SetLastVoteEpoch(7)
	conf := a.ConfigText()

	r, err := LoadState(testOpts(), sm.clock, 99, nil, conf)
	require.NoError(t, err)
	require.Equal(t, a.MyID(), r.MyID())
	cur, vote := r.Epochs()
	acur, _ := a.Epochs()
	require.Equal(t, acur, cur)
	require.Equal(t, uint64(7), vote)
	require.Equal(t, a.Myself().Slots, r.Myself().Slots)
	require.Equal(t, len(a.Nodes()), len(r.Nodes()))
	for _, n := range a.Nodes() {
		m, ok := r.Node(n.ID)
		require.True(t, ok)
		require.Equal(t, n.Flags, m.Flags, n.ID)
		require.Equal(t, n.Master, m.Master)
		require.Equal(t, n.Epoch, m.Epoch)
		require.Equal(t, n.Slots, m.Slots)
		require.Equal(t, n.IP, m.IP)
		require.Equal(t, n.CPort, m.CPort)
	}
	require.Equal(t, c.MyID(), r.Ready().Table.Migrating(5))
	// Saving what was loaded gives the same lines (ping/pong times aside).
	strip := func(b []byte) string {
		var out []string
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			if len(f) > 7 && f[0] != "vars" {
				f[4], f[5], f[7] = "x", "x", "link" // times and link state are not persisted facts
			}
			out = append(out, strings.Join(f, " "))
		}
		sort.Strings(out)
		return strings.Join(out, "\n")
	}
	require.Equal(t, strip(conf), strip(r.ConfigText()))

	for _, bad := range []string{"", "vars currentEpoch", "zz 1.2.3.4:1@2 myself,master - 0 0 0 connected",
		strings.Repeat("a", 40) + " 1.2.3.4:1@2 myself,bogus - 0 0 0 connected",
		strings.Repeat("a", 40) + " 1.2.3.4:1@2 myself,master - 0 0 0 connected 5-99999",
		strings.Repeat("a", 40) + " nocolon myself,master - 0 0 0 connected"} {
		_, err := LoadState(testOpts(), sm.clock, 1, nil, []byte(bad))
		require.ErrorIs(t, err, ErrCorruptConfig, "%q", bad)
	}
}

func TestForgetBlacklistExpires(t *testing.T) {
	sm := newSim(t, 3, testOpts())
	sm.meetAll()
	sm.run(3 * time.Second)
	a, c := sm.nodes[0], sm.nodes[2]
	require.NoError(t, a.Forget(c.MyID()))
	sm.run(30 * time.Second)
	_, known := a.Node(c.MyID())
	require.False(t, known, "re-added during the 60 s blacklist")
	// b still knows c and gossips it: after the TTL, a learns it again.
	sm.run(40 * time.Second)
	_, known = a.Node(c.MyID())
	require.True(t, known, "not re-learned after the blacklist expired")
}
