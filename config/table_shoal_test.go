package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseClusterSeeds(t *testing.T) {
	got, err := ParseClusterSeeds("shoal-0.shoal:6379, 127.0.0.1:7001@17001 [::1]:7002")
	require.NoError(t, err)
	assert.Equal(t, []ClusterSeed{
		{Host: "shoal-0.shoal", Port: 6379},
		{Host: "127.0.0.1", Port: 7001, CPort: 17001},
		{Host: "::1", Port: 7002},
	}, got)
	for _, bad := range []string{"nohost", ":6379", "a:0", "a:65536", "a:1@x", "a:1@0", "a:b"} {
		_, err := ParseClusterSeeds(bad)
		assert.Error(t, err, bad)
	}
	none, err := ParseClusterSeeds("")
	require.NoError(t, err)
	assert.Empty(t, none)
}

func TestShoalDirectivesLoadAndStayHidden(t *testing.T) {
	c, err := Load([]string{"--metrics-port", "9121", "--cluster-seeds", "a:1,b:2",
		"--cluster-bootstrap-masters", "3", "--cluster-slot-stats-enabled", "yes"})
	require.NoError(t, err)
	assert.EqualValues(t, 9121, c.Int("metrics-port"))
	assert.Equal(t, "a:1,b:2", c.String("cluster-seeds"))
	assert.EqualValues(t, 3, c.Int("cluster-bootstrap-masters"))
	assert.EqualValues(t, 1, c.Int("cluster-bootstrap-replicas"))
	assert.True(t, c.Bool("cluster-slot-stats-enabled"))
	assert.Equal(t, []string{"metrics-port", "9121"}, c.Get("metrics-port"))
	all := pairsToMap(t, c.Get("*"))
	assert.NotContains(t, all, "metrics-port")
	assert.NotContains(t, all, "cluster-seeds")

	_, err = Load([]string{"--cluster-seeds", "nohost"})
	assert.ErrorContains(t, err, "invalid seed 'nohost'")
	_, err = Load([]string{"--metrics-port", "70000"})
	assert.Error(t, err)
}

func TestClusterBusSecretDirective(t *testing.T) {
	const a, b = "aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbb"
	dir := t.TempDir()
	p := filepath.Join(dir, "shoal.conf")
	require.NoError(t, os.WriteFile(p, []byte("cluster-bus-secret \""+a+" "+b+"\"\n"), 0o644))
	c, err := Load([]string{p})
	require.NoError(t, err)
	assert.Equal(t, []string{a, b}, ClusterBusSecrets(c.String("cluster-bus-secret")))
	assert.Equal(t, []string{"cluster-bus-secret", a + " " + b}, c.Get("cluster-bus-secret"))
	assert.NotContains(t, pairsToMap(t, c.Get("*")), "cluster-bus-secret", "hidden from patterns")
	assert.True(t, c.IsSensitive("cluster-bus-secret"), "CONFIG SET arguments redacted")

	// CONFIG SET, bounded; a refused value changes nothing.
	require.NoError(t, c.Set("cluster-bus-secret", b+" "+a))
	assert.EqualError(t, c.Set("cluster-bus-secret", "short"),
		"ERR CONFIG SET failed (possibly related to argument 'cluster-bus-secret') - each secret must be at least 16 characters long")
	assert.EqualError(t, c.Set("cluster-bus-secret", strings.Repeat(a+" ", 9)),
		"ERR CONFIG SET failed (possibly related to argument 'cluster-bus-secret') - at most 8 secrets (the first encrypts, all decrypt)")
	assert.Equal(t, b+" "+a, c.String("cluster-bus-secret"))

	// CONFIG REWRITE keeps it, and the file loads back to the same value.
	require.NoError(t, c.Rewrite(p))
	c2, err := Load([]string{p})
	require.NoError(t, err)
	assert.Equal(t, b+" "+a, c2.String("cluster-bus-secret"))

	_, err = Load([]string{"--cluster-bus-secret", "tooshort"})
	assert.ErrorContains(t, err, "at least 16 characters")
}
