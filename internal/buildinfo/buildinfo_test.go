package buildinfo

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResolve(t *testing.T) {
	stamp := func(rev, modified string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) {
			return &debug.BuildInfo{Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}}, true
		}
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }

	// The Makefile's values win over Go's stamp.
	got := resolve("1a2b3c4d", "3", stamp("ffffffffffffffffffffffffffffffffffffffff", "false"))
	require.Equal(t, "1a2b3c4d", got.GitSHA1)
	require.True(t, got.GitDirty)
	require.Equal(t, 1, got.DirtyFlag())

	// Plain go build: the VCS stamp, cut to Redis's 8 digits.
	got = resolve("", "", stamp("0123456789abcdef0123456789abcdef01234567", "true"))
	require.Equal(t, "01234567", got.GitSHA1)
	require.True(t, got.GitDirty)

	// Nothing known: Redis's placeholder.
	got = resolve("", "", none)
	require.Equal(t, "00000000", got.GitSHA1)
	require.False(t, got.GitDirty)
	require.Regexp(t, `^[0-9a-f]{1,16}$`, got.BuildID)
	require.NotEqual(t, got.BuildID, resolve("1a2b3c4d", "0", none).BuildID, "the commit is part of the build id")
}
