package gossip

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func newUnstartedBus(conf string) (*Bus, error) {
	return New(Config{Options: DefaultOptions(), IP: "127.0.0.1", Port: 7000, ClusterPort: 17000,
		ConfigFile: conf, Seed: 1})
}

// A second Bus on a nodes.conf in use is refused with Redis's message, also
// after the holder's fsynced saves replaced the file by a rename (the lock
// moves to the new inode), and accepted once the holder stopped.
func TestConfigFileLockedWhileInUse(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nodes.conf")
	a, err := newUnstartedBus(conf)
	require.NoError(t, err)

	_, err = newUnstartedBus(conf)
	var inUse *ConfigInUseError
	require.True(t, errors.As(err, &inUse), "second bus on the same nodes.conf: %v", err)
	require.Equal(t, "Sorry, the cluster configuration file "+conf+" is already used by a different Redis Cluster node. "+
		"Please make sure that different nodes use different cluster configuration files.", err.Error())

	before, err := os.Stat(conf)
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, a.SaveConfig()) // fsynced: a rename
	}
	after, err := os.Stat(conf)
	require.NoError(t, err)
	require.False(t, os.SameFile(before, after), "an fsynced save renames a new file over nodes.conf")
	_, err = newUnstartedBus(conf)
	require.True(t, errors.As(err, &inUse), "after the holder's renames: %v", err)

	require.NoError(t, a.Stop())
	b, err := newUnstartedBus(conf)
	require.NoError(t, err, "the lock is released by Stop")
	require.Equal(t, a.Myself().ID, b.Myself().ID)
	require.NoError(t, b.Stop())
}
