package tlsconf

import (
	"time"

	"github.com/shoal-db/shoal/config"
)

// Enabled reports whether cfg turns TLS on anywhere (Redis configures TLS
// when tls-port, tls-replication or tls-cluster is set).
func Enabled(cfg *config.Config) bool {
	return cfg.Int("tls-port") > 0 || cfg.Bool("tls-replication") || cfg.Bool("tls-cluster")
}

// FromConfig reads the tls-* directives.
func FromConfig(cfg *config.Config) Settings {
	return Settings{
		CertFile:            cfg.String("tls-cert-file"),
		KeyFile:             cfg.String("tls-key-file"),
		ClientCertFile:      cfg.String("tls-client-cert-file"),
		ClientKeyFile:       cfg.String("tls-client-key-file"),
		CAFile:              cfg.String("tls-ca-cert-file"),
		CADir:               cfg.String("tls-ca-cert-dir"),
		DHParamsFile:        cfg.String("tls-dh-params-file"),
		Protocols:           cfg.String("tls-protocols"),
		Ciphers:             cfg.String("tls-ciphers"),
		CipherSuites:        cfg.String("tls-ciphersuites"),
		SessionCaching:      cfg.Bool("tls-session-caching"),
		SessionCacheTimeout: time.Duration(cfg.Int("tls-session-cache-timeout")) * time.Second,
		NeedCA:              AuthClients(cfg.Int("tls-auth-clients")) != AuthNo || cfg.Bool("tls-cluster") || cfg.Bool("tls-replication"),
	}
}

// AuthClientsOf reads tls-auth-clients live.
func AuthClientsOf(cfg *config.Config) func() AuthClients {
	return func() AuthClients { return AuthClients(cfg.Int("tls-auth-clients")) }
}
