package node

import (
	"testing"

	"github.com/shoal-db/shoal/command"
	"github.com/stretchr/testify/require"
)

// recentSpecs answers a name exactly as it was added (bytes as sent), keeps
// the last four, and does not keep a name longer than an entry holds.
func TestRecentSpecs(t *testing.T) {
	specs := map[string]*command.Spec{}
	for _, n := range []string{"multi", "set", "exec", "get", "incr", "a-name-of-sixteen"} {
		specs[n] = &command.Spec{Name: n}
	}
	var r recentSpecs
	for _, n := range []string{"multi", "set", "exec", "get"} {
		require.Nil(t, r.find([]byte(n)), n)
		r.add([]byte(n), specs[n])
	}
	for _, n := range []string{"multi", "set", "exec", "get"} {
		require.Same(t, specs[n], r.find([]byte(n)), n)
	}
	require.Nil(t, r.find([]byte("SET")), "another spelling is looked up in the table")
	require.Nil(t, r.find([]byte("se")))
	require.Nil(t, r.find([]byte("sets")))
	r.add([]byte("incr"), specs["incr"]) // replaces the oldest, multi
	require.Nil(t, r.find([]byte("multi")))
	require.Same(t, specs["incr"], r.find([]byte("incr")))
	require.Same(t, specs["set"], r.find([]byte("set")))
	r.add([]byte("a-name-of-sixteen"), specs["a-name-of-sixteen"])
	require.Nil(t, r.find([]byte("a-name-of-sixteen")))
	require.Same(t, specs["set"], r.find([]byte("set")), "a name not kept replaces nothing")
	require.Nil(t, r.find(nil))
}
