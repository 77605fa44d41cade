package gossip

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/tlsconf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// busTLS loads certs as a node with tls-cluster would.
func busTLS(t *testing.T, certs *testharness.Certs) *BusTLS {
	t.Helper()
	var h tlsconf.Holder
	require.NoError(t, h.Load(tlsconf.Settings{CertFile: certs.ServerCert, KeyFile: certs.ServerKey,
		ClientCertFile: certs.ClientCert, ClientKeyFile: certs.ClientKey, CAFile: certs.CA,
		SessionCaching: true, NeedCA: true}))
	return &BusTLS{Server: h.ServerConfig(func() tlsconf.AuthClients { return tlsconf.AuthYes }), Client: h.ClientConfig}
}

func tlsBus(t *testing.T, seed uint64, tc *BusTLS, secrets ...string) *Bus {
	t.Helper()
	cport, err := testharness.FreePort()
	require.NoError(t, err)
	opts := DefaultOptions()
	opts.NodeTimeout = 2 * time.Second
	b, err := New(Config{Options: opts, IP: "127.0.0.1", BindAddr: "127.0.0.1", Port: 7000 + int(seed), PPort: 6000 + int(seed),
		ClusterPort: cport, Seed: seed, RejoinInterval: time.Second, TLS: tc, Secrets: secrets})
	require.NoError(t, err)
	require.NoError(t, b.Start())
	return b
}

// Three buses over TLS form a cluster; the plaintext ports travel with the
// messages; a node with a certificate of another CA, or without TLS, stays
// out.
func TestBusOverTLS(t *testing.T) {
	certs := testharness.GenCerts(t)
	tc := busTLS(t, certs)
	buses := []*Bus{tlsBus(t, 1, tc), tlsBus(t, 2, tc), tlsBus(t, 3, tc)}
	defer stopAll(buses)
	formSecretCluster(t, buses) // gossip/secret_test.go: slots, epochs, MEETs, full mesh
	testharness.WaitFor(t, 20*time.Second, "every node's state ok", func() bool { return allConnectedOK(buses) })

	text := buses[0].NodesTextFor(true)
	for i, b := range buses {
		me := b.Myself()
		assert.Equal(t, 6001+i, me.PPort)
		assert.Contains(t, text, me.ID+" 127.0.0.1:"+strconv.Itoa(6001+i)+"@", "plaintext port of node %d", i)
		assert.Contains(t, buses[0].NodesText(), me.ID+" 127.0.0.1:"+strconv.Itoa(7001+i)+"@", "TLS port of node %d", i)
	}
	for _, n := range buses[2].Nodes() {
		assert.NotZero(t, n.PPort, "learned from the bus: %s", n.ID)
	}

	// Outsiders: another CA's certificate, and no TLS at all.
	other := tlsBus(t, 4, busTLS(t, testharness.GenCerts(t)))
	defer other.Stop()
	plainPort, err := testharness.FreePort()
	require.NoError(t, err)
	opts := DefaultOptions()
	opts.NodeTimeout = 2 * time.Second
	plain, err := New(Config{Options: opts, IP: "127.0.0.1", BindAddr: "127.0.0.1", Port: 7005, ClusterPort: plainPort, Seed: 5})
	require.NoError(t, err)
	require.NoError(t, plain.Start())
	defer plain.Stop()
	meet(t, other, buses[0])
	meet(t, buses[1], other)
	meet(t, plain, buses[0])
	meet(t, buses[2], plain)
	time.Sleep(3 * time.Second) // several ping rounds; nothing may get through
	for _, b := range buses {
		assert.False(t, mentions(b, other) && !strings.Contains(b.NodesText(), "handshake"), "a foreign CA's node joined")
		for _, n := range b.Nodes() {
			assert.NotEqual(t, other.Myself().ID, n.ID)
			assert.NotEqual(t, plain.Myself().ID, n.ID)
		}
	}
	assert.Equal(t, 1, knownNodes(other), "the outsider learned nobody")
	assert.Equal(t, 1, knownNodes(plain), "the plaintext node learned nobody")
}

// Connections stuck before their TLS handshake are bounded: past
// tlsMaxHandshakes the transport closes new ones at once; once they go,
// a real peer's stream gets through.
func TestTLSTransportBoundsHandshakes(t *testing.T) {
	certs := testharness.GenCerts(t)
	tc := busTLS(t, certs)
	tt, err := newTLSTransport("127.0.0.1", 0, *tc, zap.NewNop())
	require.NoError(t, err)
	defer tt.Shutdown()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(tt.port()))
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			_ = c.Close()
		}
	}()
	for range tlsMaxHandshakes {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		idle = append(idle, c)
	}
	testharness.WaitFor(t, 10*time.Second, "every slot taken", func() bool { return len(tt.handshakes) == tlsMaxHandshakes })
	extra, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	defer extra.Close()
	_ = extra.SetReadDeadline(time.Now().Add(3 * time.Second))
	_, err = extra.Read(make([]byte, 1))
	var ne net.Error
	require.Error(t, err)
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "closed at once, not left to its handshake deadline: %v", err)

	for _, c := range idle {
		_ = c.Close()
	}
	idle = nil
	testharness.WaitFor(t, 10*time.Second, "the slots freed", func() bool { return len(tt.handshakes) == 0 })
	s, err := tt.DialTimeout(addr, 5*time.Second)
	require.NoError(t, err)
	defer s.Close()
	select {
	case in := <-tt.StreamCh():
		_ = in.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the stream never arrived")
	}
}

// The cluster secret's keyring still seals the bus inside TLS.
func TestBusOverTLSWithSecret(t *testing.T) {
	tc := busTLS(t, testharness.GenCerts(t))
	buses := []*Bus{tlsBus(t, 1, tc, secretA), tlsBus(t, 2, tc, secretA), tlsBus(t, 3, tc, secretA)}
	defer stopAll(buses)
	formSecretCluster(t, buses)
	// A node with the CA's certificate but another secret stays out.
	other := tlsBus(t, 4, tc, secretB)
	defer other.Stop()
	meet(t, other, buses[0])
	time.Sleep(2 * time.Second)
	for _, b := range buses {
		for _, n := range b.Nodes() {
			assert.NotEqual(t, other.Myself().ID, n.ID)
		}
	}
	assert.Equal(t, 1, knownNodes(other), "the outsider learned nobody")
}

// knownNodes counts the nodes b knows by their own ID: a node it met but
// never heard from stays in handshake until node-timeout, which says
// nothing about what it learned.
func knownNodes(b *Bus) int {
	n := 0
	for _, nd := range b.Nodes() {
		if nd.Flags&FlagHandshake == 0 {
			n++
		}
	}
	return n
}
