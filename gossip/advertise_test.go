package gossip

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

func TestAdvertiseFallback(t *testing.T) {
	cidr := func(s string) net.Addr {
		ip, n, err := net.ParseCIDR(s)
		require.NoError(t, err)
		n.IP = ip
		return n
	}
	addrs := func(a ...net.Addr) func() ([]net.Addr, error) {
		return func() ([]net.Addr, error) { return a, nil }
	}
	private := func() (string, error) { return "10.1.2.3", nil }
	none := func() (string, error) { return "", nil }
	failing := func() (string, error) { return "", errors.New("no route") }

	// memberlist finds an address itself: nothing to do.
	require.Equal(t, "", advertiseFallback(private, addrs(cidr("10.1.2.3/8"))))
	// A loopback-only network namespace.
	require.Equal(t, "127.0.0.1", advertiseFallback(none, addrs(cidr("127.0.0.1/8"), cidr("::1/128"))))
	require.Equal(t, "127.0.0.1", advertiseFallback(failing, func() ([]net.Addr, error) { return nil, errors.New("x") }))
	// Public addresses only: IPv4 first, then IPv6; link-local is skipped.
	require.Equal(t, "203.0.113.7", advertiseFallback(none, addrs(cidr("127.0.0.1/8"), cidr("fe80::1/64"),
		cidr("2001:db8::5/64"), cidr("203.0.113.7/24"))))
	require.Equal(t, "2001:db8::5", advertiseFallback(failing, addrs(cidr("fe80::1/64"), cidr("2001:db8::5/64"))))
	// A private address without a default route (memberlist refuses it).
	require.Equal(t, "192.168.5.5", advertiseFallback(none, addrs(cidr("127.0.0.1/8"), cidr("192.168.5.5/24"))))
}

// TestBusAdvertisesMetAddress: nodes without cluster-announce-ip or a bind
// address, listening on every interface and met on 127.0.0.1, must show
// each other (and themselves) at 127.0.0.1 — the address they were met
// on — never another interface of the host (memberlist's guess, e.g. an
// IPv6 ULA, made clients loop on redirections). Their hostnames reach
// every node, follow a change at run time and survive a restart.
func TestBusAdvertisesMetAddress(t *testing.T) {
	dir := t.TempDir()
	var buses [3]*Bus
	start := func(i, cport int, hostname string) *Bus {
		opts := DefaultOptions()
		opts.NodeTimeout = 2 * time.Second
		b, err := New(Config{Options: opts, Port: cport - 10000, ClusterPort: cport, Hostname: hostname,
			ConfigFile: filepath.Join(dir, fmt.Sprintf("n%d.conf", i)), Seed: uint64(i + 1), RejoinInterval: time.Second})
		require.NoError(t, err)
		require.NoError(t, b.Start())
		return b
	}
	for i := range buses {
		buses[i] = start(i, testharness.BusPort(t), fmt.Sprintf("host-%d.example.com", i))
	}
	defer func() { stopAll(buses[:]) }()
	// Before anyone met it, a node does not know its address (Redis shows
	// ":port@cport" too).
	require.Equal(t, "", buses[0].Myself().IP)
	a := buses[0].Myself()
	for _, b := range buses[1:] {
		require.NoError(t, b.Meet([]byte("127.0.0.1"), []byte(strconv.Itoa(a.Port)), []byte(strconv.Itoa(a.CPort))))
	}
	want := func(hostOf func(i int) string) func() bool {
		return func() bool {
			for _, b := range buses {
				nodes := b.Nodes()
				if len(nodes) != 3 {
					return false
				}
				for _, n := range nodes {
					i := -1
					for j, o := range buses {
						if o.MyID() == n.ID {
							i = j
						}
					}
					if i < 0 || n.IP != "127.0.0.1" || n.Hostname != hostOf(i) || n.Flags&FlagHandshake != 0 {
						return false
					}
				}
			}
			return true
		}
	}
	host := func(i int) string { return fmt.Sprintf("host-%d.example.com", i) }
	if !testharness.WaitUntil(20*time.Second, want(host)) {
		for _, b := range buses {
			t.Log("\n" + b.NodesText())
		}
		t.Fatal("nodes do not show each other at the address they were met on, with their hostnames")
	}
	require.Regexp(t, `(?m)^[0-9a-f]{40} 127\.0\.0\.1:\d+@\d+,host-1\.example\.com myself,master `, buses[1].NodesText())

	// CONFIG SET cluster-announce-hostname: the next pings carry it.
	buses[1].SetAnnounced("", 0, 0, "renamed")
	renamed := func(i int) string {
		if i == 1 {
			return "renamed"
		}
		return host(i)
	}
	testharness.WaitFor(t, 20*time.Second, "the new hostname on every node", want(renamed))

	// A restarted node knows the others' addresses and hostnames from its
	// nodes.conf before any message arrives, and its own learned IP.
	cport := buses[2].Myself().CPort
	require.NoError(t, buses[2].Stop())
	opts := DefaultOptions()
	restarted, err := New(Config{Options: opts, Port: cport - 10000, ClusterPort: cport, Hostname: host(2),
		ConfigFile: filepath.Join(dir, "n2.conf")})
	require.NoError(t, err)
	n1, ok := restarted.Node(buses[1].MyID())
	require.True(t, ok)
	require.Equal(t, "renamed", n1.Hostname)
	require.Equal(t, "127.0.0.1", n1.IP)
	require.Equal(t, "127.0.0.1", restarted.Myself().IP)
	require.NoError(t, restarted.Start())
	buses[2] = restarted
	testharness.WaitFor(t, 20*time.Second, "the restarted node back", want(renamed))
}
