package tlsconf

import (
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// opensslSuites are OpenSSL's names of the TLS 1.2 (and below) suites Go's
// crypto/tls implements, in OpenSSL's DEFAULT order, with Go's ids.
// tls-ciphers is an OpenSSL cipher list; shoal takes these names, the
// DEFAULT keyword (every suite below: OpenSSL's default list holds them
// all), and exclusions ("-NAME", "!NAME") of these names or of keywords
// whose suites Go never offers (!aNULL, !MD5, ...). Anything else (HIGH,
// +NAME, @STRENGTH, a suite Go lacks such as AES256-SHA256) is refused:
// Go cannot express it.
var opensslSuites = []struct {
	name string
	id   uint16
}{
	{"ECDHE-ECDSA-AES256-GCM-SHA384", tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384},
	{"ECDHE-RSA-AES256-GCM-SHA384", tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
	{"ECDHE-ECDSA-CHACHA20-POLY1305", tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
	{"ECDHE-RSA-CHACHA20-POLY1305", tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256},
	{"ECDHE-ECDSA-AES128-GCM-SHA256", tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
	{"ECDHE-RSA-AES128-GCM-SHA256", tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
	{"ECDHE-ECDSA-AES128-SHA256", tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256},
	{"ECDHE-RSA-AES128-SHA256", tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256},
	{"ECDHE-ECDSA-AES256-SHA", tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA},
	{"ECDHE-RSA-AES256-SHA", tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA},
	{"ECDHE-ECDSA-AES128-SHA", tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA},
	{"ECDHE-RSA-AES128-SHA", tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA},
	{"AES256-GCM-SHA384", tls.TLS_RSA_WITH_AES_256_GCM_SHA384},
	{"AES128-GCM-SHA256", tls.TLS_RSA_WITH_AES_128_GCM_SHA256},
	{"AES128-SHA256", tls.TLS_RSA_WITH_AES_128_CBC_SHA256},
	{"AES256-SHA", tls.TLS_RSA_WITH_AES_256_CBC_SHA},
	{"AES128-SHA", tls.TLS_RSA_WITH_AES_128_CBC_SHA},
}

// neverOffered are OpenSSL keywords whose suites Go's crypto/tls never
// offers: excluding them changes nothing, so "!aNULL:!MD5" is accepted.
var neverOffered = map[string]bool{"ANULL": true, "ENULL": true, "NULL": true, "MD5": true, "RC4": true,
	"DES": true, "3DES": true, "EXPORT": true, "EXP": true, "LOW": true, "PSK": true, "SRP": true, "DSS": true,
	"ADSS": true, "CAMELLIA": true, "SEED": true, "IDEA": true, "DHE": true, "EDH": true, "KDHE": true,
	"ADH": true, "AECDH": true, "ARIA": true, "CCM": true, "CCM8": true}

func suiteID(name string) (uint16, bool) {
	for _, s := range opensslSuites {
		if s.name == name {
			return s.id, true
		}
	}
	return 0, false
}

// parseCiphers maps tls-ciphers to Go suite ids, in the list's order.
func parseCiphers(list string) ([]uint16, error) {
	var ids []uint16
	refuse := func(tok string) error {
		return fmt.Errorf("Failed to configure ciphers: %s (shoal takes DEFAULT and OpenSSL names of the TLS 1.2 suites Go implements, e.g. ECDHE-RSA-AES128-GCM-SHA256, and exclusions of them; %q is not one)", list, tok)
	}
	for _, tok := range splitList(list) {
		name := strings.ToUpper(tok)
		switch {
		case name == "DEFAULT":
			for _, s := range opensslSuites {
				if !slices.Contains(ids, s.id) {
					ids = append(ids, s.id)
				}
			}
		case name[0] == '-' || name[0] == '!':
			if id, ok := suiteID(name[1:]); ok {
				ids = slices.DeleteFunc(ids, func(x uint16) bool { return x == id })
			} else if !neverOffered[name[1:]] {
				return nil, refuse(tok)
			}
		default:
			id, ok := suiteID(name)
			if !ok {
				return nil, refuse(tok)
			}
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
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
