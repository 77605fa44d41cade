// Package tlsconf turns Redis 7.0's tls-* directives into Go crypto/tls
// configurations: the server side (client port, replicas arriving on
// tls-port, the cluster bus) and the client side (a replica dialing its
// master, the bus dialing peers, MIGRATE). It owns the loaded certificates:
// Load builds everything from the files and swaps it in atomically, or
// leaves the previous set untouched (Redis's tlsConfigure), so CONFIG SET
// of a tls-* file reloads the certificates without a restart and new
// connections use them.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// AuthClients is tls-auth-clients.
type AuthClients int

// The tls-auth-clients values, in the config enum's order.
const (
	AuthNo       AuthClients = 0
	AuthYes      AuthClients = 1
	AuthOptional AuthClients = 2
)

// Settings are the tls-* directives (empty string = not set).
type Settings struct {
	CertFile, KeyFile             string
	ClientCertFile, ClientKeyFile string
	CAFile, CADir                 string
	DHParamsFile                  string
	Protocols                     string // tls-protocols
	Ciphers                       string // tls-ciphers (TLS 1.2 and below)
	CipherSuites                  string // tls-ciphersuites (TLS 1.3)
	SessionCaching                bool
	SessionCacheTimeout           time.Duration
	// NeedCA: tls-auth-clients is not no, or tls-cluster / tls-replication
	// is yes: a CA is required to verify peers.
	NeedCA bool
}

// contexts is one loaded configuration: the server configs per
// tls-auth-clients value and the client config.
type contexts struct {
	server [3]*tls.Config // by AuthClients
	client *tls.Config
}

// Holder holds the current configuration; the zero value has none.
type Holder struct {
	cur atomic.Pointer[contexts]
}

// Configured reports whether Load succeeded at least once.
func (h *Holder) Configured() bool { return h.cur.Load() != nil }

// Load builds a configuration from s and makes it current; on error the
// current one stays. The error text is Redis's log line for the failure.
func (h *Holder) Load(s Settings) error {
	c, err := build(s)
	if err != nil {
		return err
	}
	h.cur.Store(c)
	return nil
}

// ServerConfig returns a server config that, at every handshake, uses the
// then current certificates and the client verification auth() returns
// (tls-auth-clients, read live as Redis reads it per accepted connection).
func (h *Holder) ServerConfig(auth func() AuthClients) *tls.Config {
	return &tls.Config{
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := h.cur.Load()
			if c == nil {
				return nil, errors.New("TLS is not configured")
			}
			a := auth()
			if a < AuthNo || a > AuthOptional {
				a = AuthYes
			}
			return c.server[a], nil
		},
	}
}

// ClientConfig is the current client config (nil before a Load). Redis's
// client context: the client certificate if tls-client-cert-file/-key-file
// are set, else the server's; peers verified against the CA. The server
// name is not checked (Redis does not check host names either: nodes are
// dialed by IP), only the chain.
func (h *Holder) ClientConfig() *tls.Config {
	c := h.cur.Load()
	if c == nil {
		return nil
	}
	return c.client
}

func build(s Settings) (*contexts, error) {
	if s.CertFile == "" {
		return nil, errors.New("No tls-cert-file configured!")
	}
	if s.KeyFile == "" {
		return nil, errors.New("No tls-key-file configured!")
	}
	if s.NeedCA && s.CAFile == "" && s.CADir == "" {
		return nil, errors.New("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!")
	}
	minV, maxV, err := parseProtocols(s.Protocols)
	if err != nil {
		return nil, err
	}
	cert, err := loadKeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		return nil, err
	}
	clientCert := cert
	if s.ClientCertFile != "" && s.ClientKeyFile != "" {
		if clientCert, err = loadKeyPair(s.ClientCertFile, s.ClientKeyFile); err != nil {
			return nil, err
		}
	}
	var pool *x509.CertPool
	if s.CAFile != "" || s.CADir != "" {
		if pool, err = loadCAs(s.CAFile, s.CADir); err != nil {
			return nil, err
		}
	}
	var suites []uint16
	if s.Ciphers != "" {
		if suites, err = parseCiphers(s.Ciphers); err != nil {
			return nil, err
		}
	}
	if s.CipherSuites != "" {
		if err := checkCipherSuites(s.CipherSuites); err != nil {
			return nil, err
		}
	}
	if s.DHParamsFile != "" {
		if err := checkDHParams(s.DHParamsFile); err != nil {
			return nil, err
		}
	}
	base := &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   minV,
		MaxVersion:   maxV,
		CipherSuites: suites,
		ClientCAs:    pool,
		// Full-size records from the first byte, as OpenSSL sends them:
		// Go's dynamic sizing cuts a connection's first 128 KB into
		// MSS-sized records, each a socket write of its own, which helps a
		// browser render early and a Redis client, which needs the whole
		// reply, not at all.
		DynamicRecordSizingDisabled: true,
	}
	if !s.SessionCaching {
		base.SessionTicketsDisabled = true
	} else if s.SessionCacheTimeout > 0 {
		limitTicketAge(base, s.SessionCacheTimeout)
	}
	c := &contexts{}
	for a, mode := range [3]tls.ClientAuthType{tls.NoClientCert, tls.RequireAndVerifyClientCert, tls.VerifyClientCertIfGiven} {
		sc := base.Clone()
		sc.ClientAuth = mode
		c.server[a] = sc
	}
	c.client = &tls.Config{
		Certificates: []tls.Certificate{clientCert},
		MinVersion:   minV,
		MaxVersion:   maxV,
		CipherSuites: suites,
		RootCAs:      pool,
		// Redis verifies the chain only (SSL_VERIFY_PEER, no host name):
		// peers are dialed by IP and certificates rarely name them.
		InsecureSkipVerify: true,
		VerifyConnection:   verifyChain(pool),
	}
	if !s.SessionCaching {
		c.client.SessionTicketsDisabled = true
	}
	return c, nil
}

// verifyChain checks the peer's chain against pool (the system roots when
// nil), without a host name.
func verifyChain(pool *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool()}
		for _, ic := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(opts)
		return err
	}
}

// limitTicketAge makes a session ticket older than maxAge resume nothing
// (a full handshake instead), as tls-session-cache-timeout bounds how long
// OpenSSL's session cache keeps a session. Go resumes through stateless
// tickets, so the ticket carries its own creation time.
func limitTicketAge(cfg *tls.Config, maxAge time.Duration) {
	cfg.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
		ss.Extra = append(ss.Extra, binary.BigEndian.AppendUint64([]byte("shoal-ts"), uint64(time.Now().Unix())))
		return cfg.EncryptTicket(cs, ss)
	}
	cfg.UnwrapSession = func(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
		ss, err := cfg.DecryptTicket(identity, cs)
		if err != nil || ss == nil {
			return nil, err
		}
		for _, e := range ss.Extra {
			if len(e) == 16 && string(e[:8]) == "shoal-ts" {
				created := time.Unix(int64(binary.BigEndian.Uint64(e[8:])), 0)
				if time.Since(created) <= maxAge {
					return ss, nil
				}
			}
		}
		return nil, nil // expired or not ours: full handshake
	}
}

// parseProtocols maps tls-protocols ("TLSv1.2 TLSv1.3", case-insensitive)
// to a version range. Go cannot leave a hole in the range: "TLSv1.1
// TLSv1.3" is refused. Default (empty): TLS 1.2 and 1.3, as Redis.
func parseProtocols(s string) (uint16, uint16, error) {
	if strings.TrimSpace(s) == "" {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	versions := map[string]uint16{"tlsv1": tls.VersionTLS10, "tlsv1.1": tls.VersionTLS11,
		"tlsv1.2": tls.VersionTLS12, "tlsv1.3": tls.VersionTLS13}
	var have [4]bool
	for _, tok := range strings.Fields(s) {
		v, ok := versions[strings.ToLower(tok)]
		if !ok {
			return 0, 0, errors.New("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
		}
		have[v-tls.VersionTLS10] = true
	}
	lo, hi := -1, -1
	for i, h := range have {
		if h {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	for i := lo; i <= hi; i++ {
		if !have[i] {
			return 0, 0, fmt.Errorf("Invalid tls-protocols specified: %q leaves a gap between versions, which Go's crypto/tls cannot configure (use a contiguous range)", s)
		}
	}
	return uint16(tls.VersionTLS10 + lo), uint16(tls.VersionTLS10 + hi), nil
}

// loadKeyPair reads a certificate chain and its unencrypted private key.
func loadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load certificate: %s: %v", certFile, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load private key: %s: %v", keyFile, err)
	}
	if b, _ := pem.Decode(keyPEM); b != nil && (b.Type == "ENCRYPTED PRIVATE KEY" || b.Headers["Proc-Type"] != "") {
		return tls.Certificate{}, fmt.Errorf("Failed to load private key: %s: the key is encrypted, which shoal does not support (decrypt it: openssl pkey -in %s -out plain.key)", keyFile, keyFile)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load certificate: %s: %v", certFile, err)
	}
	return cert, nil
}

// loadCAs reads the CA file and every PEM file of the CA directory.
func loadCAs(file, dir string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("Failed to configure CA certificate(s) file/directory: %s: %v", file, err)
		}
		if !pool.AppendCertsFromPEM(data) {
			return nil, fmt.Errorf("Failed to configure CA certificate(s) file/directory: %s: no certificate found", file)
		}
	}
	if dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("Failed to configure CA certificate(s) file/directory: %s: %v", dir, err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			// OpenSSL's hashed directory holds PEM files (and links to
			// them); anything that is not PEM is skipped as OpenSSL does.
			if data, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				pool.AppendCertsFromPEM(data)
			}
		}
	}
	return pool, nil
}

// checkDHParams checks that tls-dh-params-file holds PEM DH parameters, as
// Redis fails to start on a bad file. Go's crypto/tls has no DHE suites
// (ECDHE only), so the parameters are then not used.
func checkDHParams(file string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("Failed to load %s: %v", file, err)
	}
	if b, _ := pem.Decode(data); b == nil || b.Type != "DH PARAMETERS" {
		return fmt.Errorf("%s: failed to read DH params.", file)
	}
	return nil
}
