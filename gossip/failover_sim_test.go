package gossip

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/shoal-db/shoal/failover"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// fsim is a deterministic cluster for the failover tests: State machines on
// a fake clock, a simulated network (per-message delay, loss, partitions),
// crashes and restarts from the last saved nodes.conf, and a model of
// replication (a replica's offset follows its master's while it can reach
// it). Time advances in 10 ms steps; each node's 100 ms cron has its own
// phase. Everything random comes from one seeded source.
type fsim struct {
	t      testing.TB
	clock  *clock.Fake
	rng    *rand.Rand
	nodes  []*fnode
	byAddr map[string]*fnode
	steps  uint64

	queue []flight
	// loss is the probability that a message is lost; maxDelay bounds a
	// message's random delivery delay (0: delivered within the same step).
	loss     float64
	maxDelay time.Duration
	// codec sends every message through Encode/Decode, as on the wire.
	codec bool
	// cut reports whether traffic between two nodes is cut (a partition).
	cut func(a, b *fnode) bool

	// Invariants: the winner of each election epoch, and the node owning
	// each (slot, configEpoch) in any node's view.
	winners   map[uint64]string
	slotEpoch map[[2]uint64]string
	checkSlot []int
	violation string
	// log, when set, receives every node's logs (debugging a seed).
	log *zap.Logger
	// dataGuards models what the server does about a master that restarted
	// without its data (failover/datalost.go): such a master lets no
	// replica sync while it waits, and a replica refuses a full sync that
	// would replace its data with an empty history while it can take over.
	dataGuards bool
}

type fnode struct {
	idx       int
	st        *State
	opts      Options
	addr      string
	port      int
	alive     bool
	conf      []byte
	confDirty bool
	wakeAt    time.Time // the Bus's timer: NextWakeup after the last step
	seed      uint64
	phase     uint64
	offset    int64 // replication offset of the data this node holds
	frozen    bool  // does not replicate (SIGSTOPped replica in 05-slave-selection)
	paused    time.Time
	wasRep    bool

	// writes acked by this node while a master (manual failover checks).
	acked int64
}

type flight struct {
	at       time.Time
	from, to *fnode
	msg      *Message
}

func newFsim(t testing.TB, seed uint64, opts Options, n int) *fsim {
	fs := &fsim{t: t, clock: clock.NewFake(time.Unix(1_700_000_000, 0)), rng: rand.New(rand.NewPCG(seed, seed*7+1)),
		byAddr: map[string]*fnode{}, winners: map[uint64]string{}, slotEpoch: map[[2]uint64]string{}, codec: true}
	for i := 0; i < n; i++ {
		port := 7000 + i
		fn := &fnode{idx: i, opts: opts, port: port, addr: "127.0.0.1:" + strconv.Itoa(port+10000), alive: true,
			seed: seed*1000 + uint64(i) + 1, phase: fs.rng.Uint64N(10)}
		fn.st = NewState(opts, fs.clock, fn.seed, nil, "", "127.0.0.1", port, port+10000, "")
		fs.nodes = append(fs.nodes, fn)
		fs.byAddr[fn.addr] = fn
	}
	return fs
}

// cluster builds masters × (1 + replicas) nodes: node i < masters is a
// master with an equal share of the slots and configEpoch i+1; replica r of
// master m is node masters + r*masters + m (Redis's test layout: #5 is
// the replica of #0 in a 5+5 cluster).
func newCluster(t testing.TB, seed uint64, opts Options, masters, replicas int) *fsim {
	fs := newFsim(t, seed, opts, masters*(1+replicas))
	for i := 0; i < masters; i++ {
		require.NoError(t, fs.nodes[i].st.SetConfigEpoch([]byte(strconv.Itoa(i+1))))
	}
	for _, fn := range fs.nodes[1:] {
		require.NoError(t, fn.st.Meet([]byte("127.0.0.1"), []byte("7000"), nil))
	}
	fs.run(3 * time.Second)
	per := slots.Count / masters
	for i := 0; i < masters; i++ {
		end := (i+1)*per - 1
		if i == masters-1 {
			end = slots.Count - 1
		}
		require.NoError(t, fs.nodes[i].st.AddSlotsRange([][]byte{[]byte(strconv.Itoa(i * per)), []byte(strconv.Itoa(end))}))
		fs.checkSlot = append(fs.checkSlot, i*per)
	}
	fs.run(2 * time.Second)
	for r := 0; r < replicas; r++ {
		for m := 0; m < masters; m++ {
			rep := fs.nodes[masters+r*masters+m]
			require.NoError(t, rep.st.Replicate(fs.nodes[m].st.MyID(), true))
			rep.wasRep = true
		}
	}
	fs.waitFor(20*time.Second, "cluster up", func() bool { return fs.allOK(true) })
	return fs
}

func (fs *fsim) now() time.Time { return fs.clock.Now() }

func (fs *fsim) nodeLog(i int) *zap.Logger {
	if fs.log == nil {
		return nil
	}
	return fs.log.With(zap.Int("n", i))
}

// step advances 10 ms: due crons run, replication follows, messages due are
// delivered.
func (fs *fsim) step() {
	fs.clock.Advance(10 * time.Millisecond)
	fs.steps++
	for _, fn := range fs.nodes {
		if !fn.alive {
			continue
		}
		if (fs.steps+fn.phase)%10 != 0 {
			// Between cron ticks only a deadline wakes a node: the Bus
			// arms a timer for NextWakeup after each step (collect
			// records it).
			if w := fn.wakeAt; !w.IsZero() && !fs.now().Before(w) {
				fn.wakeAt = time.Time{}
				fn.st.Wake()
				fs.collect(fn)
			}
			continue
		}
		fs.replicate(fn)
		fn.st.SetReplOffset(fn.offset)
		fn.st.Tick()
		fs.collect(fn)
	}
	fs.deliver()
}

// replicate models the data stream: a replica that can reach its master
// (not frozen, not cut, master alive) has all of its data.
func (fs *fsim) replicate(fn *fnode) {
	if fn.frozen {
		return
	}
	me := fn.st.Myself()
	if !me.IsReplica() || me.Master == "" {
		return
	}
	m := fs.byID(me.Master)
	if m == nil || !m.alive || (fs.cut != nil && fs.cut(fn, m)) {
		return
	}
	if fs.dataGuards && m.offset < fn.offset {
		if m.st.fo.DataLost() || fn.st.MasterRestartedEmpty(me.Master) {
			fs.collect(fn)
			return
		}
	}
	fn.offset = m.offset
}

func (fs *fsim) byID(id string) *fnode {
	for _, fn := range fs.nodes {
		if fn.st.MyID() == id {
			return fn
		}
	}
	return nil
}

// collect takes a node's Ready: saves nodes.conf first (as the Bus does,
// fsync before sending), applies pauses, checks invariants, queues messages.
func (fs *fsim) collect(fn *fnode) {
	rd := fn.st.Ready()
	if rd.Save {
		// nodes.conf is written now (fsync before the messages below);
		// the text is taken when needed (a crash), which is the same
		// content and much cheaper than rendering it at every save.
		fn.confDirty = true
	}
	if rd.PauseWrites > 0 {
		fn.paused = fs.now().Add(rd.PauseWrites)
	}
	if rd.ResumeWrites {
		fn.paused = time.Time{}
	}
	fs.checkInvariants(fn)
	fn.wakeAt = fn.st.NextWakeup()
	for _, e := range rd.Messages {
		to := fs.byAddr[e.Addr]
		if to == nil {
			continue
		}
		at := fs.now()
		if fs.maxDelay > 0 {
			at = at.Add(time.Duration(fs.rng.Int64N(int64(fs.maxDelay))))
		}
		fs.queue = append(fs.queue, flight{at: at, from: fn, to: to, msg: e.Msg})
	}
}

func (fs *fsim) checkInvariants(fn *fnode) {
	me := fn.st.Myself()
	if fn.wasRep && me.IsMaster() && me.NumSlots > 0 {
		if w, ok := fs.winners[me.ConfigEpoch]; ok && w != me.ID {
			fs.fail("two election winners in epoch %d: %s and %s", me.ConfigEpoch, w, me.ID)
		}
		fs.winners[me.ConfigEpoch] = me.ID
	}
	fn.wasRep = me.IsReplica()
	for _, j := range fs.checkSlot {
		o := fn.st.owner.get(j)
		if o == nil {
			continue
		}
		k := [2]uint64{uint64(j), o.configEpoch}
		if w, ok := fs.slotEpoch[k]; ok && w != o.id {
			fs.fail("slot %d has two masters with configEpoch %d: %s and %s (seen by %s)", j, o.configEpoch, w, o.id, fn.st.MyID())
		}
		fs.slotEpoch[k] = o.id
	}
}

func (fs *fsim) fail(format string, args ...any) {
	if fs.violation == "" {
		fs.violation = fmt.Sprintf(format, args...)
	}
}

// deliver hands over the messages that are due, until none is left for
// now (bounded: a message handler may answer at once).
func (fs *fsim) deliver() {
	now := fs.now()
	for round := 0; round < 100; round++ {
		var due, later []flight
		for _, f := range fs.queue {
			if f.at.After(now) {
				later = append(later, f)
			} else {
				due = append(due, f)
			}
		}
		if len(due) == 0 {
			return
		}
		fs.queue = later
		for _, f := range due {
			if !f.from.alive || !f.to.alive || (fs.cut != nil && fs.cut(f.from, f.to)) {
				continue
			}
			if fs.loss > 0 && fs.rng.Float64() < fs.loss {
				continue
			}
			m := f.msg
			if fs.codec {
				var err error
				m, err = Decode(m.Encode())
				require.NoError(fs.t, err)
			}
			f.to.st.Step(m)
			fs.collect(f.to)
		}
	}
}

func (fs *fsim) run(d time.Duration) {
	for el := time.Duration(0); el < d; el += 10 * time.Millisecond {
		fs.step()
	}
}

// waitFor runs until cond holds (checked every 100 ms), failing after d.
func (fs *fsim) waitFor(d time.Duration, what string, cond func() bool) time.Duration {
	fs.t.Helper()
	start := fs.now()
	for el := time.Duration(0); el <= d; el += 100 * time.Millisecond {
		if cond() {
			return fs.now().Sub(start)
		}
		fs.run(100 * time.Millisecond)
	}
	fs.t.Fatalf("timed out after %s waiting for: %s\n%s", d, what, fs.dump())
	return 0
}

func (fs *fsim) dump() string {
	out := ""
	for _, fn := range fs.nodes {
		if fn.alive {
			out += fmt.Sprintf("--- node #%d (%s)\n%s", fn.idx, fn.st.InfoText()[:40], fn.st.NodesText())
		}
	}
	return out
}

// allOK reports whether every live node's cluster_state is ok (or fail).
func (fs *fsim) allOK(ok bool) bool {
	for _, fn := range fs.nodes {
		if fn.alive && fn.st.StateOK() != ok {
			return false
		}
	}
	return true
}

func (fs *fsim) kill(i int) {
	fn := fs.nodes[i]
	if fn.confDirty {
		fn.conf = fn.st.ConfigText()
		fn.confDirty = false
	}
	fn.alive = false
}

// restart brings node i back from its last saved nodes.conf, with an empty
// data set (no persistence, as in Redis's tests).
func (fs *fsim) restart(i int) {
	fn := fs.nodes[i]
	fn.seed += 7919
	st, err := LoadState(fn.opts, fs.clock, fn.seed, fs.nodeLog(i), fn.conf)
	require.NoError(fs.t, err)
	st.SetAnnounced("127.0.0.1", fn.port, fn.port+10000, "")
	fn.st = st
	fn.alive = true
	fn.offset = 0
	fn.paused = time.Time{}
	fn.wasRep = st.Myself().IsReplica()
}

// restartEmpty restarts node i from its nodes.conf without its data, as
// the server does (Bus.RestartedWithoutData); it returns whether the node
// waits for a replica to take over.
func (fs *fsim) restartEmpty(i int) bool {
	fs.restart(i)
	wait := fs.nodes[i].st.RestartedWithoutData()
	fs.collect(fs.nodes[i])
	return wait
}

// write acknowledges n writes on master i (when it accepts writes).
func (fs *fsim) write(i, n int) bool {
	fn := fs.nodes[i]
	if !fn.alive || fn.st.Myself().IsReplica() || fs.now().Before(fn.paused) || !fn.st.StateOK() {
		return false
	}
	fn.offset += int64(n)
	fn.acked = fn.offset
	return true
}

func (fs *fsim) id(i int) string { return fs.nodes[i].st.MyID() }

func (fs *fsim) isMaster(i int) bool { return fs.nodes[i].st.Myself().IsMaster() }

func (fs *fsim) masterOf(i int) string { return fs.nodes[i].st.Myself().Master }

func (fs *fsim) currentEpoch(i int) uint64 {
	e, _ := fs.nodes[i].st.Epochs()
	return e
}

// seenBy reports the flags node i has for node j.
func (fs *fsim) flagsSeenBy(i, j int) Flags {
	n, _ := fs.nodes[i].st.Node(fs.id(j))
	return n.Flags
}

func (fs *fsim) noViolation() {
	fs.t.Helper()
	require.Empty(fs.t, fs.violation)
}

// ---- Redis's cluster tests as deterministic scenarios ----

// scenarioOpts are Redis's tests/cluster settings (cluster-node-timeout
// 3000 ms, validity factor 10).
func scenarioOpts() Options {
	o := DefaultOptions()
	o.NodeTimeout = 3 * time.Second
	return o
}

// 01-faildet: killing replicas keeps the cluster up; killing a master whose
// replica is dead takes it down; restarting the master brings it back.
func TestFailoverScenario01FailDet(t *testing.T) {
	fs := newCluster(t, 1, scenarioOpts(), 5, 1)
	fs.kill(6)
	fs.kill(7)
	fs.run(10 * time.Second)
	require.True(t, fs.allOK(true), "cluster should still be up after killing two replicas")
	fs.kill(1) // its replica #6 is dead: no failover possible
	fs.waitFor(20*time.Second, "cluster down", func() bool { return fs.allOK(false) })
	for _, i := range []int{0, 2, 3} {
		require.NotZero(t, fs.flagsSeenBy(i, 1)&FlagFail, "node %d sees #1 as %s", i, fs.flagsSeenBy(i, 1))
	}
	fs.restart(1)
	fs.waitFor(20*time.Second, "cluster up again", func() bool { return fs.allOK(true) })
	require.True(t, fs.isMaster(1))
	fs.noViolation()
}

// 02-failover: the replica of a killed master takes over with a higher
// epoch; the restarted old master rejoins as its replica.
func TestFailoverScenario02Failover(t *testing.T) {
	fs := newCluster(t, 2, scenarioOpts(), 5, 1)
	before := fs.currentEpoch(1)
	fs.kill(0)
	fs.waitFor(30*time.Second, "epoch rises", func() bool { return fs.currentEpoch(1) > before })
	fs.waitFor(30*time.Second, "cluster up", func() bool { return fs.allOK(true) })
	require.True(t, fs.isMaster(5))
	require.True(t, fs.write(5, 100), "the new master accepts writes")
	fs.restart(0)
	fs.waitFor(30*time.Second, "#0 becomes a replica of #5", func() bool {
		return !fs.isMaster(0) && fs.masterOf(0) == fs.id(5)
	})
	fs.noViolation()
}

// 05-slave-selection part 1: of two replicas, the one with the higher
// replication offset wins; the other re-points to it.
func TestFailoverScenario05SlaveSelection(t *testing.T) {
	fs := newCluster(t, 5, scenarioOpts(), 5, 2)
	// #5 and #10 replicate #0. Freeze #10 while writes go on.
	fs.run(time.Second)
	fs.nodes[10].frozen = true
	for k := 0; k < 50; k++ {
		fs.write(0, 10)
		fs.run(100 * time.Millisecond)
	}
	require.Greater(t, fs.nodes[5].offset, fs.nodes[10].offset)
	fs.kill(0)
	fs.nodes[10].frozen = false // the master is dead: nothing left to replicate
	fs.waitFor(30*time.Second, "#5 becomes master", func() bool { return fs.isMaster(5) })
	require.False(t, fs.isMaster(10), "the replica with less data must not win")
	fs.waitFor(30*time.Second, "cluster up", func() bool { return fs.allOK(true) })
	fs.waitFor(30*time.Second, "#10 replicates #5", func() bool { return fs.masterOf(10) == fs.id(5) })
	fs.noViolation()
}

// 05-slave-selection part 2: 3 masters, 5 replicas on the first; kill five
// successive masters of that shard, each time a replica takes over.
func TestFailoverScenario05ConsecutiveMasters(t *testing.T) {
	fs := newCluster(t, 52, scenarioOpts(), 3, 1)
	// Three more replicas for #0 (nodes 6, 7, 8) — five in all with #3 ...
	for k := 0; k < 4; k++ {
		port := 7000 + len(fs.nodes)
		fn := &fnode{idx: len(fs.nodes), opts: scenarioOpts(), port: port, addr: "127.0.0.1:" + strconv.Itoa(port+10000),
			alive: true, seed: 5200 + uint64(k), phase: uint64(k)}
		fn.st = NewState(fn.opts, fs.clock, fn.seed, nil, "", "127.0.0.1", port, port+10000, "")
		fs.nodes = append(fs.nodes, fn)
		fs.byAddr[fn.addr] = fn
		require.NoError(t, fn.st.Meet([]byte("127.0.0.1"), []byte("7000"), nil))
	}
	fs.run(3 * time.Second)
	for _, i := range []int{6, 7, 8, 9} {
		require.NoError(t, fs.nodes[i].st.Replicate(fs.id(0), true))
		fs.nodes[i].wasRep = true
	}
	fs.waitFor(20*time.Second, "five replicas of #0", func() bool {
		n, _ := fs.nodes[1].st.Node(fs.id(0))
		return len(n.Replicas) == 5
	})
	shard := fs.id(0)
	victim := 0
	for round := 0; round < 5; round++ {
		e := fs.currentEpoch(1)
		fs.kill(victim)
		fs.waitFor(30*time.Second, "a new master for the shard", func() bool {
			o := fs.nodes[1].st.owner.get(0)
			return o != nil && o.id != shard && fs.currentEpoch(1) > e
		})
		shard = fs.nodes[1].st.owner.get(0).id
		victim = fs.byID(shard).idx
		fs.waitFor(30*time.Second, "cluster up", func() bool { return fs.allOK(true) })
	}
	fs.noViolation()
}

// 06-slave-stop-cond: a replica whose data is older than the validity
// factor allows does not fail over; the cluster stays down.
func TestFailoverScenario06SlaveStopCond(t *testing.T) {
	o := scenarioOpts()
	fs := newCluster(t, 6, o, 5, 1)
	fs.nodes[5].st.SetOptions(func() Options { x := o; x.ValidityFactor = 2; return x }())
	// #5 is unreachable for 20 s (DEBUG SLEEP 20), then its master dies at
	// once. Allowed age: 10 s (repl-ping-replica-period) + 2 × 3 s.
	rep := fs.nodes[5]
	fs.cut = func(a, b *fnode) bool { return a == rep || b == rep }
	fs.run(20 * time.Second)
	fs.kill(0)
	fs.cut = nil
	fs.run(10 * time.Second)
	require.False(t, fs.isMaster(5), "a replica with stale data must not fail over")
	fs.waitFor(10*time.Second, "cluster down", func() bool { return fs.allOK(false) })
	fs.noViolation()
}

// 07-replica-migration part 1: masters whose replicas all died each get a
// migrated replica from the masters that have two.
func TestFailoverScenario07ReplicaMigration(t *testing.T) {
	fs := newCluster(t, 7, scenarioOpts(), 5, 2)
	// Replicas of #0: 5, 10; of #1: 6, 11.
	for _, i := range []int{5, 10, 6, 11} {
		fs.kill(i)
	}
	for _, m := range []int{0, 1} {
		fs.waitFor(60*time.Second, fmt.Sprintf("master #%d gets a replica", m), func() bool {
			n, _ := fs.nodes[m].st.Node(fs.id(m))
			for _, r := range n.Replicas {
				if f := fs.byID(r); f != nil && f.alive {
					return true
				}
			}
			return false
		})
	}
	fs.noViolation()
}

// 07-replica-migration part 2: a replica promoted without siblings gets a
// migrated replica too.
func TestFailoverScenario07PromotedGetsReplica(t *testing.T) {
	fs := newCluster(t, 72, scenarioOpts(), 5, 2)
	fs.kill(7) // replica of #2; #12 remains
	fs.run(5 * time.Second)
	fs.kill(2)
	fs.waitFor(30*time.Second, "#12 fails over", func() bool { return fs.isMaster(12) })
	fs.waitFor(30*time.Second, "cluster up", func() bool { return fs.allOK(true) })
	require.True(t, fs.write(12, 10))
	fs.waitFor(60*time.Second, "#12 gets a migrated replica", func() bool {
		n, _ := fs.nodes[12].st.Node(fs.id(12))
		for _, r := range n.Replicas {
			if f := fs.byID(r); f != nil && f.alive {
				return true
			}
		}
		return false
	})
	fs.noViolation()
}

// 08-update-msg: the old master, restarted while its successor is down,
// becomes a replica because of UPDATE messages.
func TestFailoverScenario08UpdateMsg(t *testing.T) {
	fs := newCluster(t, 8, scenarioOpts(), 5, 1)
	fs.kill(0)
	fs.waitFor(30*time.Second, "#5 becomes master", func() bool { return fs.isMaster(5) })
	fs.waitFor(30*time.Second, "cluster up", func() bool { return fs.allOK(true) })
	fs.kill(5)
	fs.waitFor(30*time.Second, "cluster down", func() bool { return fs.allOK(false) })
	fs.restart(0)
	fs.waitFor(30*time.Second, "#0 becomes a replica", func() bool { return !fs.isMaster(0) })
	require.Equal(t, fs.id(5), fs.masterOf(0))
	fs.restart(5)
	fs.waitFor(30*time.Second, "cluster up again", func() bool { return fs.allOK(true) })
	fs.noViolation()
}

// 10-manual-failover: CLUSTER FAILOVER during writes loses nothing: the
// master pauses, the replica reaches its offset, then takes over; the old
// master becomes a replica.
func TestFailoverScenario10ManualFailover(t *testing.T) {
	fs := newCluster(t, 10, scenarioOpts(), 5, 1)
	fs.run(time.Second)
	for k := 0; k < 20; k++ {
		fs.write(0, 7)
		fs.run(50 * time.Millisecond)
	}
	require.NoError(t, fs.nodes[5].st.Failover(nil))
	// Writes keep coming; the paused master acks none of them.
	var lastAckOld int64
	for k := 0; k < 200 && !fs.isMaster(5); k++ {
		if fs.write(0, 3) {
			lastAckOld = fs.nodes[0].offset
		}
		if fs.isMaster(5) {
			break
		}
		fs.run(10 * time.Millisecond)
	}
	require.True(t, fs.isMaster(5), "manual failover did not complete")
	require.GreaterOrEqual(t, fs.nodes[5].offset, lastAckOld, "an acknowledged write is missing on the new master")
	require.GreaterOrEqual(t, fs.nodes[5].offset, fs.nodes[0].acked, "an acknowledged write is missing on the new master")
	fs.waitFor(10*time.Second, "#0 becomes a replica", func() bool { return fs.masterOf(0) == fs.id(5) })
	require.False(t, fs.write(0, 1), "the old master must not accept writes")
	require.True(t, fs.write(5, 1))
	fs.waitFor(10*time.Second, "cluster up", func() bool { return fs.allOK(true) })
	fs.waitFor(time.Second, "the old master resumes its clients", func() bool { return fs.nodes[0].paused.IsZero() })
	fs.noViolation()
}

// 10-manual-failover part 2 and 3: with the master unreachable, a plain
// CLUSTER FAILOVER times out (the automatic failover then fires, as in
// Redis's test); FORCE promotes the replica at once.
func TestFailoverScenario10UnreachableMaster(t *testing.T) {
	fs := newCluster(t, 102, scenarioOpts(), 5, 1)
	m := fs.nodes[0]
	fs.cut = func(a, b *fnode) bool { return a == m || b == m } // DEBUG SLEEP 10
	require.NoError(t, fs.nodes[5].st.Failover(nil))
	fs.run(2 * time.Second)
	require.False(t, fs.isMaster(5), "no master handshake, no manual failover")
	fs.waitFor(10*time.Second, "automatic failover", func() bool { return fs.isMaster(5) })
	fs.cut = nil

	fs2 := newCluster(t, 103, scenarioOpts(), 5, 1)
	m2 := fs2.nodes[0]
	fs2.cut = func(a, b *fnode) bool { return a == m2 || b == m2 }
	fs2.run(500 * time.Millisecond)
	require.NoError(t, fs2.nodes[5].st.Failover([]byte("force")))
	d := fs2.waitFor(5*time.Second, "FORCE promotes #5", func() bool { return fs2.isMaster(5) })
	require.Less(t, d, 3*time.Second, "FORCE must not wait for the failure detection")
	fs2.cut = nil
	fs2.waitFor(20*time.Second, "#0 becomes a replica", func() bool { return fs2.masterOf(0) == fs2.id(5) })
	fs.noViolation()
	fs2.noViolation()
}

// 11-manual-takeover: with a majority of masters dead, TAKEOVER brings their
// replicas up without votes; the old masters rejoin as replicas.
func TestFailoverScenario11ManualTakeover(t *testing.T) {
	fs := newCluster(t, 11, scenarioOpts(), 5, 1)
	for _, i := range []int{5, 6, 7} {
		o := fs.nodes[i].opts
		o.NoFailover = true
		fs.nodes[i].st.SetOptions(o)
	}
	fs.kill(0)
	fs.kill(1)
	fs.kill(2)
	fs.waitFor(30*time.Second, "cluster down", func() bool { return fs.allOK(false) })
	for _, i := range []int{5, 6, 7} {
		o := fs.nodes[i].opts
		o.NoFailover = false
		fs.nodes[i].st.SetOptions(o)
		require.NoError(t, fs.nodes[i].st.Failover([]byte("TAKEOVER")))
	}
	fs.waitFor(30*time.Second, "cluster up", func() bool { return fs.allOK(true) })
	for _, i := range []int{5, 6, 7} {
		require.True(t, fs.isMaster(i))
		require.True(t, fs.write(i, 1))
	}
	for _, i := range []int{0, 1, 2} {
		fs.restart(i)
	}
	fs.waitFor(30*time.Second, "old masters become replicas", func() bool {
		return fs.masterOf(0) == fs.id(5) && fs.masterOf(1) == fs.id(6) && fs.masterOf(2) == fs.id(7)
	})
}

// 13-no-failover-option: the nofailover flag propagates and a replica with
// it never takes over.
func TestFailoverScenario13NoFailoverOption(t *testing.T) {
	fs := newCluster(t, 13, scenarioOpts(), 5, 1)
	o := fs.nodes[5].opts
	o.NoFailover = true
	fs.nodes[5].st.SetOptions(o)
	fs.waitFor(10*time.Second, "nofailover propagates", func() bool {
		for i := 0; i < 10; i++ {
			if i != 5 && fs.flagsSeenBy(i, 5)&FlagNoFailover == 0 {
				return false
			}
		}
		return true
	})
	fs.kill(0)
	fs.run(10 * time.Second)
	require.True(t, fs.allOK(false) || !fs.allOK(true))
	require.False(t, fs.isMaster(5))
	fs.waitFor(5*time.Second, "cluster down", func() bool { return fs.allOK(false) })
	fs.restart(0)
	fs.waitFor(30*time.Second, "cluster up", func() bool { return fs.allOK(true) })
	fs.noViolation()
}

// A master cut off from the majority stops accepting writes after
// node-timeout (CLUSTERDOWN), while the majority elects its replica; when
// the partition heals the old master becomes a replica.
func TestFailoverMinorityMasterGoesDown(t *testing.T) {
	o := DefaultOptions()
	o.NodeTimeout = time.Second
	fs := newCluster(t, 14, o, 3, 1)
	m := fs.nodes[0]
	fs.cut = func(a, b *fnode) bool { return (a == m) != (b == m) }
	start := fs.now()
	d := fs.waitFor(5*time.Second, "minority master refuses writes", func() bool { return !m.st.StateOK() })
	require.Less(t, d, 1600*time.Millisecond, "a minority master must stop accepting writes within ~node-timeout")
	require.False(t, fs.write(0, 1))
	fs.waitFor(10*time.Second, "replica elected", func() bool { return fs.isMaster(3) })
	t.Logf("minority master down after %s; replica promoted after %s", d, fs.now().Sub(start))
	fs.cut = nil
	fs.waitFor(10*time.Second, "old master rejoins as replica", func() bool { return fs.masterOf(0) == fs.id(3) })
	fs.waitFor(10*time.Second, "cluster up", func() bool { return fs.allOK(true) })
	fs.noViolation()
}

// The time from a master's crash to its replica's promotion, at
// node-timeout 1 s, with shoal's election delays and with Redis's.
func TestFailoverTimeToPromotion(t *testing.T) {
	measure := func(delays bool, seed uint64) time.Duration {
		o := DefaultOptions()
		o.NodeTimeout = time.Second
		if delays {
			o.ElectionDelays = failover.RedisDelays()
		}
		fs := newCluster(t, seed, o, 3, 1)
		fs.run(time.Second)
		fs.kill(0)
		return fs.waitFor(10*time.Second, "promotion", func() bool { return fs.isMaster(3) })
	}
	var ours, redis time.Duration
	const n = 8
	for i := uint64(0); i < n; i++ {
		ours += measure(false, 100+i)
		redis += measure(true, 100+i)
	}
	ours /= n
	redis /= n
	t.Logf("mean crash → promotion at NT=1s: shoal delays %s, Redis delays %s", ours, redis)
	require.Less(t, ours, 1700*time.Millisecond)
	require.Less(t, ours, redis)
}

// ---- randomized schedules ----

// baseCluster is a 3+3 (or 3+6) cluster built once and saved as nodes.conf
// texts; each schedule loads its nodes from them (as after a restart).
type baseCluster struct {
	confs  [][]byte
	check  []int
	opts   Options
	copies int
}

func buildBase(t testing.TB, replicas int) *baseCluster {
	o := DefaultOptions()
	o.NodeTimeout = time.Second
	fs := newCluster(t, 4242+uint64(replicas), o, 3, replicas)
	fs.run(2 * time.Second)
	b := &baseCluster{opts: o, check: fs.checkSlot}
	for _, fn := range fs.nodes {
		b.confs = append(b.confs, fn.st.ConfigText())
	}
	return b
}

// fromBase makes a simulation of the base cluster with its own seed.
func fromBase(t testing.TB, b *baseCluster, seed uint64, opts Options, log *zap.Logger) *fsim {
	fs := &fsim{t: t, log: log, clock: clock.NewFake(time.Unix(1_700_000_000, 0)), rng: rand.New(rand.NewPCG(seed, seed*7+1)),
		byAddr: map[string]*fnode{}, winners: map[uint64]string{}, slotEpoch: map[[2]uint64]string{}, checkSlot: b.check}
	for i, conf := range b.confs {
		port := 7000 + i
		fn := &fnode{idx: i, opts: opts, port: port, addr: "127.0.0.1:" + strconv.Itoa(port+10000), alive: true,
			conf: conf, seed: seed*1000 + uint64(i) + 1, phase: fs.rng.Uint64N(10)}
		st, err := LoadState(opts, fs.clock, fn.seed, fs.nodeLog(i), conf)
		require.NoError(t, err)
		st.SetAnnounced("127.0.0.1", port, port+10000, "")
		fn.st = st
		fn.wasRep = st.Myself().IsReplica()
		fs.nodes = append(fs.nodes, fn)
		fs.byAddr[fn.addr] = fn
	}
	return fs
}

// runSchedule plays one random schedule of faults for d of simulated time:
// crashes and restarts, partitions (symmetric or one-way), message loss and
// delay, frozen replication, CLUSTER FAILOVER [FORCE] on random nodes,
// writes; every delivery checks the invariants.
func runSchedule(t testing.TB, b *baseCluster, seed uint64, d time.Duration) (string, int) {
	return runScheduleLog(t, b, seed, d, nil)
}

// runScheduleLog is runSchedule with the schedule's events and the nodes'
// logs sent to logf (debugging one seed). It returns the first invariant
// violation ("" for none) and the number of elections won.
func runScheduleLog(t testing.TB, b *baseCluster, seed uint64, d time.Duration, logf func(string, ...any)) (string, int) {
	r := rand.New(rand.NewPCG(seed, 99))
	opts := b.opts
	switch r.IntN(3) {
	case 0: // near-simultaneous elections: the vote rules alone keep it safe
		opts.ElectionDelays = failover.Delays{Fixed: time.Millisecond, Random: time.Millisecond, PerRank: time.Millisecond}
	case 1:
		opts.ElectionDelays = failover.RedisDelays()
	}
	if r.IntN(4) == 0 {
		opts.ValidityFactor = 0
	}
	var log *zap.Logger
	if logf != nil {
		cfg := zap.NewDevelopmentConfig()
		cfg.Level = zap.NewAtomicLevelAt(zap.InfoLevel)
		cfg.EncoderConfig.TimeKey = ""
		cfg.EncoderConfig.CallerKey = ""
		log, _ = cfg.Build(zap.AddStacktrace(zap.FatalLevel))
	}
	fs := fromBase(t, b, seed, opts, log)
	say := func(format string, args ...any) {
		if logf != nil {
			logf("%s: "+format, append([]any{fs.now().Format("05.000")}, args...)...)
		}
	}
	fs.codec = false
	fs.loss = []float64{0, 0, 0.05, 0.2, 0.4}[r.IntN(5)]
	fs.maxDelay = []time.Duration{0, 5 * time.Millisecond, 50 * time.Millisecond, 300 * time.Millisecond}[r.IntN(4)]
	n := len(fs.nodes)
	var side map[*fnode]bool
	oneWay := false
	partUntil := time.Time{}
	fs.cut = func(a, b *fnode) bool {
		if side == nil {
			return false
		}
		if oneWay {
			return side[a] && !side[b]
		}
		return side[a] != side[b]
	}
	end := fs.now().Add(d)
	for fs.now().Before(end) && fs.violation == "" {
		fs.run(time.Duration(100+r.IntN(900)) * time.Millisecond)
		for i := 0; i < 3; i++ {
			fs.write(r.IntN(n), 1+r.IntN(5))
		}
		if side != nil && fs.now().After(partUntil) {
			side = nil
		}
		switch ev := r.IntN(10); {
		case ev < 2: // crash a live node (at most two down)
			dead := 0
			for _, fn := range fs.nodes {
				if !fn.alive {
					dead++
				}
			}
			if dead < 2 {
				i := r.IntN(n)
				say("kill #%d %s", i, fs.id(i))
				fs.kill(i)
			}
		case ev < 4: // restart a dead node
			for _, i := range r.Perm(n) {
				if !fs.nodes[i].alive {
					say("restart #%d", i)
					fs.restart(i)
					break
				}
			}
		case ev < 6 && side == nil: // partition
			side = map[*fnode]bool{}
			k := 1 + r.IntN(n/2)
			for _, i := range r.Perm(n)[:k] {
				side[fs.nodes[i]] = true
			}
			oneWay = r.IntN(3) == 0
			partUntil = fs.now().Add(time.Duration(500+r.IntN(5000)) * time.Millisecond)
			say("partition oneWay=%v until %s: %d nodes", oneWay, partUntil.Format("05.000"), k)
		case ev == 6: // freeze/unfreeze a replica's data stream
			fn := fs.nodes[r.IntN(n)]
			fn.frozen = !fn.frozen
		case ev == 7: // CLUSTER FAILOVER [FORCE] on a live node (TAKEOVER bypasses votes by design)
			fn := fs.nodes[r.IntN(n)]
			if fn.alive {
				var mode []byte
				if r.IntN(2) == 0 {
					mode = []byte("force")
				}
				err := fn.st.Failover(mode)
				say("CLUSTER FAILOVER %s on #%d: %v", mode, fn.idx, err)
				fs.collect(fn)
			}
		}
	}
	return fs.violation, len(fs.winners)
}

// TestFailoverRandomSchedules plays thousands of seeded fault schedules and
// checks, at every step, that no two election winners share an epoch and
// that no slot has two masters with the same configEpoch in any node's
// view. SHOAL_FAILOVER_SCHEDULES raises the count. The first minSchedules
// always run, however slow the machine (a count, not a speed check); the
// rest run while the wall budget lasts.
func TestFailoverRandomSchedules(t *testing.T) {
	const minSchedules = 10
	total := 2000
	if v, err := strconv.Atoi(getenv("SHOAL_FAILOVER_SCHEDULES")); err == nil && v > 0 {
		total = v
	}
	budget := 25 * time.Second
	if testing.Short() {
		budget = 5 * time.Second
	}
	bases := []*baseCluster{buildBase(t, 1), buildBase(t, 2)}
	start := time.Now()
	ran, elections := 0, 0
	for seed := uint64(1); seed <= uint64(total); seed++ {
		if ran >= minSchedules && time.Since(start) > budget && getenv("SHOAL_FAILOVER_SCHEDULES") == "" {
			break
		}
		b := bases[seed%2]
		v, won := runSchedule(t, b, seed, 15*time.Second)
		if v != "" {
			t.Fatalf("schedule seed %d (replicas per master %d): %s", seed, 1+int(seed%2), v)
		}
		ran++
		elections += won
	}
	t.Logf("%d schedules of 15 s simulated time, %d elections won, no violation (%s)", ran, elections,
		time.Since(start).Round(time.Millisecond))
}

func getenv(k string) string { return os.Getenv(k) }

// TestFailoverViewAppendNodesReusesItsBuffer: the failover machine's view
// of the cluster is rebuilt every cron tick into the buffer of the last
// one; a refill leaves nothing of the old contents (a longer replica list,
// replicas where there are none now) and allocates nothing.
func TestFailoverViewAppendNodesReusesItsBuffer(t *testing.T) {
	fs := newCluster(t, 7, scenarioOpts(), 3, 1)
	v := fs.nodes[0].st.view()
	fresh := v.AppendNodes(nil)
	require.Len(t, fresh, 6)
	replicas := 0
	for _, n := range fresh {
		replicas += len(n.Replicas)
	}
	require.Equal(t, 3, replicas, "three masters with one replica each")

	stale := make([]failover.Node, 8)
	for i := range stale {
		stale[i] = failover.Node{ID: "stale", Replicas: []string{"a", "b", "c", "d"}, Fail: true, NumSlots: 99}
	}
	got := v.AppendNodes(stale)
	require.Len(t, got, len(fresh))
	require.Same(t, &stale[0], &got[0], "the buffer is reused")
	for i := range fresh {
		want, have := fresh[i], got[i]
		require.Len(t, have.Replicas, len(want.Replicas), "node %s", want.ID)
		if len(want.Replicas) > 0 {
			require.Equal(t, want.Replicas, have.Replicas)
		}
		want.Replicas, have.Replicas = nil, nil
		require.Equal(t, want, have)
	}
	if allocs := testing.AllocsPerRun(20, func() { got = v.AppendNodes(got) }); allocs != 0 {
		t.Fatalf("a refill allocated %v times", allocs)
	}
}
