//go:build race

package store

// raceEnabled: the race detector makes sync.Pool drop a share of what is
// put in it, so reuse is not certain.
const raceEnabled = true
