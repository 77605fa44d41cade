//go:build race

package testharness

// RaceEnabled reports whether the binary was built with -race.
const RaceEnabled = true
