package node

import "github.com/shoal-db/shoal/command"

// The C-string argument helpers of package command, under the names node's
// remaining handlers use.

// argIs is command.ArgIs: an option word compared as Redis's strcasecmp.
func argIs(b []byte, kw string) bool { return command.ArgIs(b, kw) }

// cString is command.CString: b up to its first NUL byte.
func cString(b []byte) string { return command.CString(b) }

// parseScanCursor is command.ParseScanCursor (HSCAN, SSCAN, ZSCAN).
func parseScanCursor(b []byte) (uint64, bool) { return command.ParseScanCursor(b) }

// scanMaxCount is command.ScanMaxCount.
const scanMaxCount = command.ScanMaxCount
