package tlsconf

import (
	"crypto/tls"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func settings(c *testharness.Certs) Settings {
	return Settings{CertFile: c.ServerCert, KeyFile: c.ServerKey, ClientCertFile: c.ClientCert,
		ClientKeyFile: c.ClientKey, CAFile: c.CA, SessionCaching: true, NeedCA: true}
}

// handshake runs one TLS handshake over a pipe and returns the server's
// error and the certificate the client saw.
func handshake(t *testing.T, srv, cli *tls.Config) (error, *tls.ConnectionState) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	_ = a.SetDeadline(time.Now().Add(10 * time.Second))
	_ = b.SetDeadline(time.Now().Add(10 * time.Second))
	done := make(chan error, 1)
	go func() {
		s := tls.Server(a, srv)
		err := s.Handshake()
		if err == nil {
			_, err = s.Write([]byte("y"))
		}
		done <- err
		_ = a.Close()
	}()
	c := tls.Client(b, cli)
	var st *tls.ConnectionState
	if err := c.Handshake(); err == nil {
		cs := c.ConnectionState()
		st = &cs
		// TLS 1.3 checks the client certificate after the client's
		// handshake returned: read the server's byte or its alert.
		_, _ = c.Read(make([]byte, 1))
	}
	_ = c.Close() // a failed client handshake must not leave the server waiting
	return <-done, st
}

func TestServerAuthClientsAndReload(t *testing.T) {
	certs := testharness.GenCerts(t)
	var h Holder
	require.NoError(t, h.Load(settings(certs)))
	mode := AuthYes
	srv := h.ServerConfig(func() AuthClients { return mode })

	err, _ := handshake(t, srv, certs.ClientTLS(t, true))
	require.NoError(t, err)
	err, _ = handshake(t, srv, certs.ClientTLS(t, false))
	require.Error(t, err, "tls-auth-clients yes refuses a client without a certificate")
	mode = AuthOptional
	err, _ = handshake(t, srv, certs.ClientTLS(t, false))
	require.NoError(t, err)
	mode = AuthNo
	err, _ = handshake(t, srv, certs.ClientTLS(t, false))
	require.NoError(t, err)

	// The client side presents the client certificate and verifies the
	// server's chain without a host name.
	mode = AuthYes
	err, st := handshake(t, srv, h.ClientConfig())
	require.NoError(t, err)
	require.NotNil(t, st)
	first := st.PeerCertificates[0].SerialNumber.Int64()

	// Reload: a new PKI; new handshakes use the new server certificate.
	certs2 := testharness.GenCerts(t)
	require.NoError(t, h.Load(settings(certs2)))
	err, st = handshake(t, srv, certs2.ClientTLS(t, true))
	require.NoError(t, err)
	require.NotNil(t, st)
	assert.Equal(t, first, st.PeerCertificates[0].SerialNumber.Int64()) // same serial scheme,
	assert.NotEqual(t, certs.ServerCert, certs2.ServerCert)
	err, _ = handshake(t, srv, certs.ClientTLS(t, true))
	require.Error(t, err, "the old CA no longer verifies the new server")

	// A failing load keeps the current configuration.
	bad := settings(certs2)
	bad.CertFile = certs2.Dir + "/missing.crt"
	require.ErrorContains(t, h.Load(bad), "Failed to load certificate: "+bad.CertFile)
	err, _ = handshake(t, srv, certs2.ClientTLS(t, true))
	require.NoError(t, err)
}

func TestBuildErrors(t *testing.T) {
	certs := testharness.GenCerts(t)
	var h Holder
	s := settings(certs)
	s.CertFile = ""
	assert.EqualError(t, h.Load(s), "No tls-cert-file configured!")
	s = settings(certs)
	s.KeyFile = ""
	assert.EqualError(t, h.Load(s), "No tls-key-file configured!")
	s = settings(certs)
	s.CAFile = ""
	assert.EqualError(t, h.Load(s), "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!")
	s.NeedCA = false
	assert.NoError(t, h.Load(s))
	s = settings(certs)
	s.CAFile, s.CADir = "", certs.Dir
	assert.NoError(t, h.Load(s), "tls-ca-cert-dir")

	s = settings(certs)
	s.Protocols = "TLSv1.4"
	assert.EqualError(t, h.Load(s), "Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
	s.Protocols = "TLSv1.1 TLSv1.3"
	assert.ErrorContains(t, h.Load(s), "gap")
	s.Protocols = "tlsv1.3"
	require.NoError(t, h.Load(s))
	assert.Equal(t, uint16(tls.VersionTLS13), h.ClientConfig().MinVersion)

	s = settings(certs)
	s.Ciphers = "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384"
	require.NoError(t, h.Load(s))
	assert.Equal(t, []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}, h.ClientConfig().CipherSuites)
	s.Ciphers = "HIGH:!aNULL"
	assert.ErrorContains(t, h.Load(s), "Failed to configure ciphers: HIGH:!aNULL")
	s.Ciphers = "AES256-SHA256" // OpenSSL has it, Go does not
	assert.ErrorContains(t, h.Load(s), "Failed to configure ciphers: AES256-SHA256")
	s.Ciphers = "DEFAULT:-AES128-SHA256:!aNULL:!MD5"
	require.NoError(t, h.Load(s))
	assert.Len(t, h.ClientConfig().CipherSuites, len(opensslSuites)-1)
	assert.NotContains(t, h.ClientConfig().CipherSuites, tls.TLS_RSA_WITH_AES_128_CBC_SHA256)
	s.Ciphers = "!ECDHE:DEFAULT" // an exclusion Go would not honour
	assert.Error(t, h.Load(s))

	s = settings(certs)
	s.CipherSuites = "TLS_AES_256_GCM_SHA384"
	assert.ErrorContains(t, h.Load(s), "Failed to configure ciphersuites")
	s.CipherSuites = "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256"
	assert.NoError(t, h.Load(s))

	s = settings(certs)
	s.DHParamsFile = certs.CA
	assert.EqualError(t, h.Load(s), certs.CA+": failed to read DH params.")

	// An encrypted key is refused with a way out.
	enc := certs.Dir + "/enc.key"
	require.NoError(t, os.WriteFile(enc, []byte("-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"), 0o600))
	s = settings(certs)
	s.KeyFile = enc
	assert.ErrorContains(t, h.Load(s), "the key is encrypted")
}

func TestSessionCaching(t *testing.T) {
	certs := testharness.GenCerts(t)
	resumed := func(s Settings) bool {
		var h Holder
		require.NoError(t, h.Load(s))
		srv := h.ServerConfig(func() AuthClients { return AuthNo })
		cli := certs.ClientTLS(t, false)
		cli.ClientSessionCache = tls.NewLRUClientSessionCache(4)
		cli.MaxVersion = tls.VersionTLS12 // the ticket arrives in the handshake
		err, _ := handshake(t, srv, cli)
		require.NoError(t, err)
		err, st := handshake(t, srv, cli)
		require.NoError(t, err)
		return st.DidResume
	}
	s := settings(certs)
	s.SessionCacheTimeout = 300 * time.Second
	assert.True(t, resumed(s))
	s.SessionCaching = false
	assert.False(t, resumed(s))
}

func TestFromConfig(t *testing.T) {
	c, err := config.Load([]string{"--tls-auth-clients", "optional", "--tls-cert-file", "/c", "--tls-session-cache-timeout", "60"})
	require.NoError(t, err)
	s := FromConfig(c)
	assert.Equal(t, "/c", s.CertFile)
	assert.True(t, s.NeedCA)
	assert.Equal(t, 60*time.Second, s.SessionCacheTimeout)
	assert.Equal(t, AuthOptional, AuthClientsOf(c)())
	assert.False(t, Enabled(c))
}

// writeCounter counts the socket writes under a TLS connection.
type writeCounter struct {
	net.Conn
	writes int
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes++
	return w.Conn.Write(p)
}

// A fresh connection's reply that fits a record goes out as one record and
// one socket write (Go's dynamic record sizing made five of a 12 KB one).
func TestServerSendsFullSizeRecords(t *testing.T) {
	certs := testharness.GenCerts(t)
	var h Holder
	require.NoError(t, h.Load(settings(certs)))
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	require.NoError(t, a.SetDeadline(time.Now().Add(10*time.Second)))
	require.NoError(t, b.SetDeadline(time.Now().Add(10*time.Second)))
	sock := &writeCounter{Conn: a}
	srv := tls.Server(sock, h.ServerConfig(func() AuthClients { return AuthNo }))
	cli := tls.Client(b, certs.ClientTLS(t, false))
	done := make(chan error, 1)
	go func() { done <- cli.Handshake() }()
	require.NoError(t, srv.Handshake())
	require.NoError(t, <-done)

	reply := make([]byte, 12<<10)
	before := sock.writes
	go func() {
		_, err := srv.Write(reply)
		done <- err
	}()
	_, err := io.ReadFull(cli, make([]byte, len(reply)))
	require.NoError(t, err)
	require.NoError(t, <-done)
	assert.Equal(t, 1, sock.writes-before)
}
