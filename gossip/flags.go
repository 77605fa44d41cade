package gossip

import "strings"

// Flags are a node's flags, with Redis's bit values (cluster.h) so that they
// read the same in logs and on the wire.
type Flags uint16

const (
	FlagMaster     Flags = 1 << 0
	FlagSlave      Flags = 1 << 1
	FlagPFail      Flags = 1 << 2 // "fail?": this node's own suspicion
	FlagFail       Flags = 1 << 3 // agreed failure (quorum of masters)
	FlagMyself     Flags = 1 << 4
	FlagHandshake  Flags = 1 << 5 // met, real id not known yet
	FlagNoAddr     Flags = 1 << 6
	FlagMeet       Flags = 1 << 7 // send MEET (not PING) on first contact
	FlagMigrateTo  Flags = 1 << 8 // master eligible for replica migration
	FlagNoFailover Flags = 1 << 9
)

// flagNames is CLUSTER NODES' order (redisNodeFlagsTable). MEET and
// MIGRATE_TO are internal and never printed.
var flagNames = [...]struct {
	f    Flags
	name string
}{
	{FlagMyself, "myself"},
	{FlagMaster, "master"},
	{FlagSlave, "slave"},
	{FlagPFail, "fail?"},
	{FlagFail, "fail"},
	{FlagHandshake, "handshake"},
	{FlagNoAddr, "noaddr"},
	{FlagNoFailover, "nofailover"},
}

// String formats the flags as CLUSTER NODES does: comma-separated in Redis's
// order, "noflags" when none is set.
func (f Flags) String() string { return string(f.appendTo(nil)) }

func (f Flags) appendTo(dst []byte) []byte {
	n := len(dst)
	for _, fl := range flagNames {
		if f&fl.f != 0 {
			if len(dst) > n {
				dst = append(dst, ',')
			}
			dst = append(dst, fl.name...)
		}
	}
	if len(dst) == n {
		dst = append(dst, "noflags"...)
	}
	return dst
}

// parseFlags reads the flags field of a nodes.conf line.
func parseFlags(s string) (Flags, bool) {
	var f Flags
	for _, name := range strings.Split(s, ",") {
		switch strings.ToLower(name) {
		case "myself":
			f |= FlagMyself
		case "master":
			f |= FlagMaster
		case "slave":
			f |= FlagSlave
		case "fail?":
			f |= FlagPFail
		case "fail":
			f |= FlagFail
		case "handshake":
			f |= FlagHandshake
		case "noaddr":
			f |= FlagNoAddr
		case "nofailover":
			f |= FlagNoFailover
		case "noflags":
		default:
			return 0, false
		}
	}
	return f, true
}
