package integration

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileUserMsgHeader is issue 15's 22-byte attack: memberlist stream type
// 8 (userMsg) and the msgpack map {"UserMsgLen": 1<<40}. Before the bus
// guard, memberlist allocated the claimed TiB: fatal out of memory.
func hostileUserMsgHeader() []byte {
	b := []byte{8, 0x81, 0xaa}
	b = append(b, "UserMsgLen"...)
	b = append(b, 0xcf)
	return binary.BigEndian.AppendUint64(b, 1<<40)
}

// hostileShortVsn is a push/pull whose one node state has a 1-byte Vsn:
// memberlist's verifyProtocol indexed Vsn[1]: a panic that ended the process.
func hostileShortVsn() []byte {
	str := func(b []byte, s string) []byte { return append(append(b, 0xa0|byte(len(s))), s...) }
	b := []byte{6, 0x82}
	b = append(str(b, "Nodes"), 1)
	b = append(str(b, "UserStateLen"), 0)
	b = append(b, 0x83)
	b = str(str(b, "Name"), "evil")
	b = append(str(b, "State"), 0)
	b = append(str(b, "Vsn"), 0xc4, 1, 1)
	return b
}

// randomBusPayload is random bytes, often dressed as a memberlist message
// (a known type byte, a msgpack map claiming large lengths) so that the
// fuzz reaches past the first check.
func randomBusPayload(rng *rand.Rand) []byte {
	n := 1 + rng.IntN(600)
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	switch rng.IntN(4) {
	case 0: // a memberlist type byte, then noise
		b[0] = byte(rng.IntN(14))
	case 1: // a type byte and a map whose field claims a random length
		hdr := []byte{byte([]int{6, 8, 10, 9, 0}[rng.IntN(5)]), 0x81}
		field := []string{"UserMsgLen", "Nodes", "UserStateLen", "Vsn"}[rng.IntN(4)]
		hdr = append(append(hdr, 0xa0|byte(len(field))), field...)
		hdr = append(hdr, 0xcf)
		hdr = binary.BigEndian.AppendUint64(hdr, rng.Uint64()>>rng.IntN(64))
		b = append(hdr, b...)
	case 2: // a compound of noise
		b = append([]byte{7, byte(rng.IntN(8))}, b...)
	}
	return b
}

// TestClusterBusHostilePeer: a 3+3 cluster of real processes; every node's
// bus port gets the 22-byte header, the short-Vsn push/pull and 300 random
// TCP and 300 random UDP payloads. Every process stays up, the cluster
// stays ok, and the nodes log the drops (rate-limited per peer host).
func TestClusterBusHostilePeer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 6 server processes")
	}
	begin := time.Now()
	nodes := StartClusterNodes(t, 6)
	CreateCluster(t, nodes, 1, 60*time.Second)
	t.Logf("3+3 cluster created in %s", time.Since(begin).Round(time.Millisecond))

	const perNode = 300
	rng := rand.New(rand.NewPCG(15, 22))
	started := time.Now()
	for _, n := range nodes {
		bus := net.JoinHostPort("127.0.0.1", strconv.Itoa(n.CPort))
		for _, p := range [][]byte{hostileUserMsgHeader(), hostileShortVsn()} {
			c, err := net.DialTimeout("tcp", bus, 5*time.Second)
			if err != nil {
				t.Fatalf("dial %s: %v", bus, err)
			}
			if _, err := c.Write(p); err != nil {
				t.Fatalf("write %s: %v", bus, err)
			}
			// The node drops the connection: EOF, not a timeout.
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = io.Copy(io.Discard, c)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("%s kept the connection of a hostile header open", bus)
			}
			_ = c.Close()
		}
		for i := 0; i < perNode; i++ {
			c, err := net.DialTimeout("tcp", bus, 5*time.Second)
			if err != nil {
				t.Fatalf("dial %s: %v", bus, err)
			}
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Write(randomBusPayload(rng))
			_ = c.Close()
		}
		u, err := net.Dial("udp", bus)
		if err != nil {
			t.Fatalf("udp %s: %v", bus, err)
		}
		for i := 0; i < perNode; i++ {
			_, _ = u.Write(randomBusPayload(rng))
		}
		_ = u.Close()
	}
	t.Logf("sent 2 headers + %d TCP + %d UDP payloads to each of %d nodes in %s",
		perNode, perNode, len(nodes), time.Since(started).Round(time.Millisecond))

	for i, n := range nodes {
		if !n.Running() {
			t.Fatalf("node %d (%s) died:\n%s", i, n.Addr, n.lastLines(40))
		}
	}
	WaitClusterSettled(t, nodes, 3, 30*time.Second)
	t.Logf("all %d processes alive and the cluster ok %s after the attack began", len(nodes), time.Since(started).Round(time.Millisecond))
	for i, n := range nodes {
		if !n.Running() {
			t.Fatalf("node %d (%s) died", i, n.Addr)
		}
		// Thousands of drops, all from 127.0.0.1: a handful of lines.
		lines := strings.Count(n.Log(), "cluster bus: dropped malformed input")
		if lines < 1 || lines > 10 {
			t.Errorf("node %d logged %d drop lines, want 1 to 10 (rate-limited)", i, lines)
		}
	}
}
