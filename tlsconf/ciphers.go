package tlsconf

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// opensslSuites maps OpenSSL's names of the TLS 1.2 (and below) suites Go's
// crypto/tls implements (its secure ones) to Go's ids. tls-ciphers is an
// OpenSSL cipher list; shoal takes a list of these names (separated by
// ':', ',' or spaces) and refuses anything else, OpenSSL's keywords and
// operators (HIGH, !aNULL, @STRENGTH) included: Go cannot express them.
var opensslSuites = map[string]uint16{
	"ECDHE-ECDSA-AES128-GCM-SHA256": tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-RSA-AES128-GCM-SHA256":   tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-ECDSA-AES256-GCM-SHA384": tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-RSA-AES256-GCM-SHA384":   tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-ECDSA-CHACHA20-POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-RSA-CHACHA20-POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-ECDSA-AES128-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	"ECDHE-RSA-AES128-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	"ECDHE-ECDSA-AES256-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	"ECDHE-RSA-AES256-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	"ECDHE-ECDSA-AES128-SHA256":     tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-RSA-AES128-SHA256":       tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	"AES128-GCM-SHA256":             tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
	"AES256-GCM-SHA384":             tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
	"AES128-SHA":                    tls.TLS_RSA_WITH_AES_128_CBC_SHA,
	"AES256-SHA":                    tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	"AES128-SHA256":                 tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
}

// parseCiphers maps tls-ciphers to Go suite ids, in the list's order.
func parseCiphers(list string) ([]uint16, error) {
	var ids []uint16
	for _, name := range splitList(list) {
		id, ok := opensslSuites[strings.ToUpper(name)]
		if !ok {
			return nil, fmt.Errorf("Failed to configure ciphers: %s (shoal takes OpenSSL names of the TLS 1.2 suites Go implements, e.g. ECDHE-RSA-AES128-GCM-SHA256; %q is not one)", list, name)
		}
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("Failed to configure ciphers: %s", list)
	}
	return ids, nil
}

// goTLS13Suites are the TLS 1.3 suites Go's crypto/tls always enables; it
// cannot turn one off or order them.
var goTLS13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// checkCipherSuites accepts tls-ciphersuites only when it names every TLS
// 1.3 suite Go enables (OpenSSL's CCM suites may be listed too, Go has
// none): a shorter list would not be enforced, so it is refused.
func checkCipherSuites(list string) error {
	known := map[string]bool{"TLS_AES_128_CCM_SHA256": true, "TLS_AES_128_CCM_8_SHA256": true}
	for _, s := range goTLS13Suites {
		known[s] = true
	}
	seen := map[string]bool{}
	for _, name := range splitList(list) {
		n := strings.ToUpper(name)
		if !known[n] {
			return fmt.Errorf("Failed to configure ciphersuites: %s (%q is not a TLS 1.3 suite)", list, name)
		}
		seen[n] = true
	}
	for _, s := range goTLS13Suites {
		if !seen[s] {
			return fmt.Errorf("Failed to configure ciphersuites: %s (Go's crypto/tls always enables %s; a list without all of them cannot be enforced)", list, strings.Join(goTLS13Suites, ":"))
		}
	}
	return nil
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ':' || r == ',' || r == ' ' })
}
