package testharness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Certs are the files of a test PKI: a CA, a server certificate (for
// 127.0.0.1 and localhost, usable as a client certificate too, as Redis's
// test certificates are) and a client certificate, all signed by the CA.
type Certs struct {
	Dir                   string
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	pool                  *x509.CertPool
}

// GenCerts writes a fresh CA, server and client certificate (ECDSA P-256,
// valid for a day) into a new temporary directory of t.
func GenCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	c := &Certs{Dir: dir}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "shoal test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	c.CA = writePEM(t, dir, "ca.crt", "CERTIFICATE", caDER)
	c.pool = x509.NewCertPool()
	c.pool.AddCert(caCert)
	leaf := func(serial int64, name string, usage []x509.ExtKeyUsage) (string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  usage,
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
			DNSNames:     []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return writePEM(t, dir, name+".crt", "CERTIFICATE", der), writePEM(t, dir, name+".key", "EC PRIVATE KEY", kder)
	}
	c.ServerCert, c.ServerKey = leaf(2, "server", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth})
	c.ClientCert, c.ClientKey = leaf(3, "client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	return c
}

func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// ClientTLS is a client tls.Config trusting the CA, presenting the client
// certificate when withCert.
func (c *Certs) ClientTLS(t testing.TB, withCert bool) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: c.pool, ServerName: "localhost"}
	if withCert {
		kp, err := tls.LoadX509KeyPair(c.ClientCert, c.ClientKey)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{kp}
	}
	return cfg
}

// ServerArgs are the shoal-server / redis-server arguments that load these
// certificates (tls-port and the tls-* switches are the caller's).
func (c *Certs) ServerArgs() []string {
	return []string{"--tls-cert-file", c.ServerCert, "--tls-key-file", c.ServerKey,
		"--tls-client-cert-file", c.ClientCert, "--tls-client-key-file", c.ClientKey,
		"--tls-ca-cert-file", c.CA}
}
