// Package buildinfo says which shoal a binary is: its version and the git
// commit it was built from (--version, INFO server, LOLWUT).
package buildinfo

import (
	"crypto/sha1"
	"encoding/binary"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
)

// Version is shoal's own version: the one place it is written.
const Version = "0.1.0"

// Set at link time by the Makefile:
//
//	-ldflags "-X github.com/shoal-db/shoal/internal/buildinfo.gitSHA1=<8 hex> -X ...gitDirty=<n>"
//
// (n: the number of changed lines, as Redis's mkreleasehdr.sh counts them).
// Empty when the binary was built by plain `go build`; then the VCS stamp
// Go embeds (vcs.revision, vcs.modified) is used if there is one.
var (
	gitSHA1  string
	gitDirty string
)

// Info is the build's identity.
type Info struct {
	GitSHA1  string // 8 hex digits, "00000000" when unknown (as redis_git_sha1)
	GitDirty bool   // the work tree had uncommitted changes
	BuildID  string // 16 hex digits identifying version, commit, toolchain and platform
}

// Get returns the build's identity (computed once).
var Get = sync.OnceValue(func() Info {
	return resolve(gitSHA1, gitDirty, debug.ReadBuildInfo)
})

// resolve prefers the link-time values and falls back to Go's VCS stamp.
func resolve(sha, dirty string, read func() (*debug.BuildInfo, bool)) Info {
	info := Info{GitSHA1: sha}
	if n, err := strconv.Atoi(dirty); err == nil && n > 0 {
		info.GitDirty = true
	}
	if info.GitSHA1 == "" {
		if bi, ok := read(); ok {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					info.GitSHA1 = s.Value
				case "vcs.modified":
					info.GitDirty = s.Value == "true"
				}
			}
		}
	}
	if len(info.GitSHA1) > 8 {
		info.GitSHA1 = info.GitSHA1[:8]
	}
	if info.GitSHA1 == "" {
		info.GitSHA1 = "00000000"
	}
	// Like redisBuildId: a hash of what makes this build this build.
	sum := sha1.Sum([]byte(Version + " " + info.GitSHA1 + " " + strconv.FormatBool(info.GitDirty) + " " +
		runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH))
	info.BuildID = strconv.FormatUint(binary.BigEndian.Uint64(sum[:8]), 16)
	return info
}

// DirtyFlag is redis_git_dirty's value: 1 for a dirty work tree, else 0.
func (i Info) DirtyFlag() int {
	if i.GitDirty {
		return 1
	}
	return 0
}
