package config

import (
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
