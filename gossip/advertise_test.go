package gossip

import (
	"errors"
	"net"
	"testing"

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
