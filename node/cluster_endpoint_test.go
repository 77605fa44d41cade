package node

import (
	"testing"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

// TestPreferredEndpoint: the host a MOVED redirect names follows
// cluster-preferred-endpoint-type as Redis's getPreferredEndpoint does.
func TestPreferredEndpoint(t *testing.T) {
	withName := &slots.Node{IP: "10.0.0.1", Port: 7000, Hostname: "node-a"}
	noName := &slots.Node{IP: "10.0.0.2", Port: 7001}
	cases := []struct {
		typ            string
		named, unnamed string
	}{
		{"ip", "10.0.0.1", "10.0.0.2"},
		{"hostname", "node-a", "?"},
		{"unknown-endpoint", "", ""},
	}
	for _, tc := range cases {
		cfg, err := config.Load([]string{"--cluster-preferred-endpoint-type", tc.typ})
		require.NoError(t, err)
		s, err := New(cfg, Options{})
		require.NoError(t, err)
		require.Equal(t, tc.named, s.preferredEndpoint(withName), tc.typ)
		require.Equal(t, tc.unnamed, s.preferredEndpoint(noName), tc.typ)
	}
}
