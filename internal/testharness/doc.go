// Package testharness holds the helpers that shoal's tests and test rigs
// share, whatever they start (an in-process node, a gossip Bus, a
// redis-server or shoal-server process): free loopback ports, bounded
// waits for a condition, and RESP reply readers. It imports no shoal
// package, so every package's tests may use it; only tests, the process
// harness in integration/ and the programs under scripts/ import it.
package testharness
