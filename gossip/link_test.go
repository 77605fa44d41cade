package gossip

import (
	"bytes"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

// linksWith returns b's CLUSTER LINKS entries with peer id, by direction.
func linksWith(b *Bus, id string) map[string][]Link {
	out := map[string][]Link{}
	for _, l := range b.Links() {
		if l.Node == id {
			out[l.Direction] = append(out[l.Direction], l)
		}
	}
	return out
}

// oneLinkEachWay reports whether every bus has exactly one "to" and one
// "from" link with each other bus and no other link.
func oneLinkEachWay(buses []*Bus) bool {
	for _, b := range buses {
		if len(b.Links()) != 2*(len(buses)-1) {
			return false
		}
		for _, o := range buses {
			if o == b {
				continue
			}
			l := linksWith(b, o.MyID())
			if len(l["to"]) != 1 || len(l["from"]) != 1 {
				return false
			}
		}
	}
	return true
}

// infoField is one field of b's CLUSTER INFO.
func infoField(b *Bus, name string) string {
	for _, line := range strings.Split(b.InfoText(), "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			return v
		}
	}
	return ""
}

// linkedPair starts two buses that meet, a with every slot, and waits for
// their links; they stop with the test.
func linkedPair(t *testing.T, network *MemNetwork) (a, b *Bus) {
	t.Helper()
	a, b = memBus(t, network, 1), memBus(t, network, 2)
	buses := []*Bus{a, b}
	t.Cleanup(func() { stopAll(buses) })
	require.NoError(t, a.AddSlotsRange(args("0 16383")))
	meet(t, b, a)
	testharness.WaitFor(t, 20*time.Second, "the pair to mesh", func() bool { return fullMesh(buses) && oneLinkEachWay(buses) })
	return a, b
}

// Each node has two links with each peer (24-links.tcl): one it dialed,
// one the peer dialed, told apart by the sender of their first message.
func TestLinksOneToAndOneFromPerPeer(t *testing.T) {
	network := &MemNetwork{}
	buses := []*Bus{memBus(t, network, 1), memBus(t, network, 2), memBus(t, network, 3)}
	defer func() { stopAll(buses) }()
	formSecretCluster(t, buses) // no secret here: it only forms the cluster
	testharness.WaitFor(t, 10*time.Second, "one to and one from link per peer", func() bool { return oneLinkEachWay(buses) })
	for _, b := range buses {
		for _, l := range b.Links() {
			require.Contains(t, []string{"r", "rw"}, l.Events)
			require.Positive(t, l.CreateTime)
		}
	}
}

// A link to a peer that stops reading (a stalled process) fills its send
// buffer, which CLUSTER LINKS shows; past cluster-link-sendbuf-limit the
// cron frees it and counts it, and a new link with a newer create time
// replaces it; the peer's link to us is untouched (24-links.tcl, "Disconnect
// link when send buffer limit reached").
func TestLinkFreedPastSendBufferLimitAndRedialled(t *testing.T) {
	network := &MemNetwork{}
	a, b := linkedPair(t, network)
	require.Equal(t, "0", infoField(a, "total_cluster_links_buffer_limit_exceeded"))

	opts := DefaultOptions()
	opts.NodeTimeout = time.Hour // no link timeout while b is stalled
	opts.LinkSendBufLimit = 256 << 10
	a.SetOptions(opts)
	peer := b.MyID()
	origTo, origFrom := linksWith(a, peer)["to"][0], linksWith(a, peer)["from"][0]

	network.Stall(b.Myself().IP+":"+strconv.Itoa(b.Myself().CPort), true)
	payload := bytes.Repeat([]byte("x"), 128<<10)
	var maxUsed int64
	freed := false
	for i := 0; i < 200 && !freed; i++ {
		a.Publish([]byte("channel"), payload)
		time.Sleep(20 * time.Millisecond)
		if to := linksWith(a, peer)["to"]; len(to) == 1 && to[0].CreateTime == origTo.CreateTime {
			maxUsed = max(maxUsed, to[0].SendBufferUsed)
			require.GreaterOrEqual(t, to[0].SendBufferAllocated, to[0].SendBufferUsed)
		}
		freed = infoField(a, "total_cluster_links_buffer_limit_exceeded") == "1"
	}
	require.True(t, freed, "the link was never freed over the limit")
	require.Greater(t, maxUsed, int64(0), "the send buffer never showed in CLUSTER LINKS")
	network.Stall(b.Myself().IP+":"+strconv.Itoa(b.Myself().CPort), false)

	testharness.WaitFor(t, 20*time.Second, "a new link to the peer", func() bool {
		to := linksWith(a, peer)["to"]
		return len(to) == 1 && to[0].CreateTime > origTo.CreateTime
	})
	from := linksWith(a, peer)["from"]
	require.Len(t, from, 1)
	require.Equal(t, origFrom.CreateTime, from[0].CreateTime, "the peer's link to us was not touched")
	require.Equal(t, "1", infoField(a, "total_cluster_links_buffer_limit_exceeded"))
}

// DEBUG CLUSTERLINK KILL from closes the peer's link to us: the peer
// connects again, a new "from" link.
func TestLinkKillFromReconnects(t *testing.T) {
	network := &MemNetwork{}
	a, b := linkedPair(t, network)
	orig := linksWith(a, b.MyID())["from"][0]
	time.Sleep(5 * time.Millisecond) // a new link's create time differs in ms
	require.NoError(t, a.KillLink("from", b.MyID()))
	testharness.WaitFor(t, 20*time.Second, "a new link from the peer", func() bool {
		from := linksWith(a, b.MyID())["from"]
		return len(from) == 1 && from[0].CreateTime > orig.CreateTime
	})
}

// A link frame is bounded before anything is allocated, and with a
// cluster secret a frame it does not seal is refused: an outsider that
// dials the bus port and sends a forged FAIL, then a frame claiming 1 GiB,
// changes nothing and is counted as rejected.
func TestLinkRefusesForgedAndOversizedFrames(t *testing.T) {
	network := &MemNetwork{}
	buses := []*Bus{memBus(t, network, 1, secretA), memBus(t, network, 2, secretA), memBus(t, network, 3, secretA)}
	defer func() { stopAll(buses) }()
	formSecretCluster(t, buses)
	before := buses[2].Rejected()

	outsider := network.NewTransport()
	defer func() { _ = outsider.Shutdown() }()
	to := buses[2].Myself()
	frame := func(payload []byte) []byte {
		n := len(payload)
		return append([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, payload...)
	}
	fail := &Message{Type: MsgFail, Sender: buses[1].MyID(), About: buses[0].MyID(), CurrentEpoch: 99, IP: "127.0.0.1"}
	for _, data := range [][]byte{frame(fail.Encode()), {0x40, 0, 0, 0}} {
		c, err := outsider.DialTimeout(to.IP+":"+strconv.Itoa(to.CPort), time.Second)
		require.NoError(t, err)
		go func() { _, _ = c.Write(append([]byte{linkMagic}, data...)) }()
		// The bus closes the connection: a read returns.
		_ = c.SetReadDeadline(time.Now().Add(testharness.Slack(10 * time.Second)))
		_, err = c.Read(make([]byte, 1))
		require.Error(t, err)
		_ = c.Close()
	}
	testharness.WaitFor(t, 5*time.Second, "both frames rejected", func() bool { return buses[2].Rejected() >= before+2 })
	require.True(t, fullMesh(buses), "the forged FAIL was acted on:\n%s", buses[2].NodesText())
}

// A link whose peer leaves a ping unanswered (ping pending over
// node-timeout/2, the link older than node-timeout, nothing received for
// node-timeout/2) is closed and a new one dialled (clusterCron's link
// timeout), without any buffer limit.
func TestLinkTimeoutRedials(t *testing.T) {
	network := &MemNetwork{}
	a, b := linkedPair(t, network) // node-timeout 2 s
	orig := linksWith(a, b.MyID())["to"][0]
	addr := b.Myself().IP + ":" + strconv.Itoa(b.Myself().CPort)
	network.Stall(addr, true)
	network.Cut(addr, a.Myself().IP+":"+strconv.Itoa(a.Myself().CPort), true) // b's answers are lost too
	testharness.WaitFor(t, 20*time.Second, "the timed-out link replaced", func() bool {
		to := linksWith(a, b.MyID())["to"]
		return len(to) == 1 && to[0].CreateTime > orig.CreateTime
	})
	require.Equal(t, "0", infoField(a, "total_cluster_links_buffer_limit_exceeded"))
	network.Stall(addr, false)
	network.Cut(addr, a.Myself().IP+":"+strconv.Itoa(a.Myself().CPort), false)
	testharness.WaitFor(t, 20*time.Second, "the pair linked again", func() bool { return fullMesh([]*Bus{a, b}) })
}

// Stop ends every link goroutine, a writer blocked on a stalled peer
// included: the process is back to the goroutines it had before.
func TestLinksLeaveNoGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	network := &MemNetwork{}
	a, b := memBus(t, network, 1), memBus(t, network, 2)
	buses := []*Bus{a, b}
	require.NoError(t, a.AddSlotsRange(args("0 16383")))
	meet(t, b, a)
	testharness.WaitFor(t, 20*time.Second, "the pair to mesh", func() bool { return fullMesh(buses) && oneLinkEachWay(buses) })
	network.Stall(b.Myself().IP+":"+strconv.Itoa(b.Myself().CPort), true)
	payload := bytes.Repeat([]byte("x"), 128<<10)
	testharness.WaitFor(t, 10*time.Second, "a blocked writer", func() bool {
		a.Publish([]byte("channel"), payload)
		to := linksWith(a, b.MyID())["to"]
		return len(to) == 1 && to[0].SendBufferUsed > 0
	})
	stopAll(buses)
	testharness.WaitFor(t, 10*time.Second, "the goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}
