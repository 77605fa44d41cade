package gossip

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoal-db/shoal/clock"
	"github.com/stretchr/testify/require"
)

// sim is an in-memory cluster of State machines sharing a fake clock;
// messages are delivered by address, in order, with no sockets.
type sim struct {
	t      *testing.T
	clock  *clock.Fake
	nodes  []*State
	byAddr map[string]*State
	queue  []Envelope
	// drop, when set, decides whether a message from → to is lost.
	drop func(from, to *State) bool
	// dropMsg, when set, decides whether one message is lost.
	dropMsg func(from *State, m *Message) bool
	from    map[*Message]*State
	// lost counts slots reported lost by each node; movedOut those
	// reported moved out (MovedOutSlots).
	lost, movedOut map[*State][]int
}

func newSim(t *testing.T, n int, opts Options) *sim {
	sm := &sim{t: t, clock: clock.NewFake(time.Unix(1_700_000_000, 0)), byAddr: map[string]*State{},
		from: map[*Message]*State{}, lost: map[*State][]int{}, movedOut: map[*State][]int{}}
	for i := 0; i < n; i++ {
		sm.add(opts, uint64(i+1))
	}
	return sm
}

func (sm *sim) add(opts Options, seed uint64) *State {
	i := len(sm.nodes)
	port := 7000 + i
	st := NewState(opts, sm.clock, seed, nil, "", "127.0.0.1", port, port+10000, "")
	sm.nodes = append(sm.nodes, st)
	sm.byAddr[fmt.Sprintf("127.0.0.1:%d", port+10000)] = st
	return st
}

// collect moves every node's outbox into the network queue.
func (sm *sim) collect() {
	for _, st := range sm.nodes {
		rd := st.Ready()
		for _, e := range rd.Messages {
			sm.from[e.Msg] = st
			sm.queue = append(sm.queue, e)
		}
		sm.lost[st] = append(sm.lost[st], rd.LostSlots...)
		sm.movedOut[st] = append(sm.movedOut[st], rd.MovedOutSlots...)
	}
}

// deliver runs the network until it is quiet (bounded).
func (sm *sim) deliver() {
	for round := 0; round < 10000; round++ {
		sm.collect()
		if len(sm.queue) == 0 {
			return
		}
		q := sm.queue
		sm.queue = nil
		for _, e := range q {
			from := sm.from[e.Msg]
			delete(sm.from, e.Msg)
			to := sm.byAddr[e.Addr]
			if to == nil || (sm.drop != nil && sm.drop(from, to)) || (sm.dropMsg != nil && sm.dropMsg(from, e.Msg)) {
				continue
			}
			// Through the codec, as on the wire.
			m, err := Decode(e.Msg.Encode())
			require.NoError(sm.t, err)
			to.Step(m)
		}
	}
	sm.t.Fatal("network did not quiesce")
}

// run advances the clock in 100 ms ticks for d, delivering after each.
func (sm *sim) run(d time.Duration) {
	for el := time.Duration(0); el < d; el += 100 * time.Millisecond {
		sm.clock.Advance(100 * time.Millisecond)
		for _, st := range sm.nodes {
			st.Tick()
		}
		sm.deliver()
	}
}

func (sm *sim) meetAll() {
	for _, st := range sm.nodes[1:] {
		me := sm.nodes[0].Myself()
		require.NoError(sm.t, st.Meet([]byte(me.IP), []byte(fmt.Sprint(me.Port)), nil))
	}
	sm.deliver()
}

func testOpts() Options {
	o := DefaultOptions()
	o.NodeTimeout = 2 * time.Second
	return o
}

func knownIDs(st *State) []string {
	var ids []string
	for _, n := range st.Nodes() {
		if n.Flags&FlagHandshake == 0 {
			ids = append(ids, n.ID)
		}
	}
	return ids
}
