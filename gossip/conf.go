package gossip

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/shoal-db/shoal/clock"
	"github.com/shoal-db/shoal/slots"
	"go.uber.org/zap"
)

// ErrCorruptConfig is returned for a nodes.conf Redis would refuse
// ("Unrecoverable error: corrupted cluster config file.").
var ErrCorruptConfig = errors.New("gossip: corrupted cluster config file")

// maxConfigSize bounds the nodes.conf we are willing to read.
const maxConfigSize = 64 << 20

// LoadState rebuilds a State from the content of nodes.conf (clusterLoadConfig):
// the same id, epochs, flags, masters, slots, marks and peers. ping_sent and
// pong_received that were non-zero are set to "now", as Redis does.
func LoadState(opts Options, clk clock.Clock, seed uint64, log *zap.Logger, data []byte) (*State, error) {
	if len(data) > maxConfigSize {
		return nil, ErrCorruptConfig
	}
	s := newState(opts, clk, seed, log)
	now := s.clock.Now()
	get := func(id string) *node {
		n := s.nodes[id]
		if n == nil {
			n = s.newNode(id, 0)
			s.addNode(n)
		}
		return n
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		argv := strings.Fields(line)
		if len(argv) == 0 {
			continue
		}
		if strings.EqualFold(argv[0], "vars") {
			if len(argv)%2 == 0 {
				return nil, ErrCorruptConfig
			}
			for j := 1; j < len(argv); j += 2 {
				v, _ := strconv.ParseUint(argv[j+1], 10, 64)
				switch strings.ToLower(argv[j]) {
				case "currentepoch":
					s.currentEpoch = v
				case "lastvoteepoch":
					s.lastVoteEpoch = v
				}
			}
			continue
		}
		if len(argv) < 8 || !ValidID(argv[0]) {
			return nil, ErrCorruptConfig
		}
		n := get(argv[0])
		addr := argv[1]
		if i := strings.IndexByte(addr, ','); i >= 0 {
			n.hostname = addr[i+1:]
			addr = addr[:i]
		}
		p := strings.LastIndexByte(addr, ':')
		if p < 0 {
			return nil, ErrCorruptConfig
		}
		n.ip = addr[:p]
		portStr := addr[p+1:]
		busStr := ""
		if i := strings.IndexByte(portStr, '@'); i >= 0 {
			portStr, busStr = portStr[:i], portStr[i+1:]
		}
		n.port = atoi(portStr)
		if busStr != "" {
			n.cport = atoi(busStr)
		} else {
			n.cport = n.port + 10000
		}
		flags, ok := parseFlags(argv[2])
		if !ok {
			return nil, ErrCorruptConfig
		}
		if flags&FlagMyself != 0 {
			if s.myself != nil {
				return nil, ErrCorruptConfig
			}
			s.myself = n
		}
		n.flags = flags
		if argv[3] != "-" {
			if !ValidID(argv[3]) {
				return nil, ErrCorruptConfig
			}
			m := get(argv[3])
			n.master = m
			m.addReplica(n)
		}
		if atoi(argv[4]) != 0 {
			n.pingSent = now
		}
		if atoi(argv[5]) != 0 {
			n.pongReceived = now
		}
		if n.isSlave() && n.master != nil {
			n.configEpoch = 0
		} else {
			n.configEpoch, _ = strconv.ParseUint(argv[6], 10, 64)
		}
		if n.failed() {
			n.failTime = now
		}
		for _, tok := range argv[8:] {
			if strings.HasPrefix(tok, "[") {
				dash := strings.IndexByte(tok, '-')
				end := strings.IndexByte(tok, ']')
				if dash < 0 || end < 0 || dash+3 > end || len(tok) < dash+3 {
					return nil, ErrCorruptConfig
				}
				slot, err := strconv.Atoi(tok[1:dash])
				if err != nil || slot < 0 || slot >= slots.Count {
					return nil, ErrCorruptConfig
				}
				dir := tok[dash+1]
				peer := tok[dash+3 : end]
				if !ValidID(peer) {
					return nil, ErrCorruptConfig
				}
				if dir == '>' {
					s.migrating.set(slot, get(peer))
				} else {
					s.importing.set(slot, get(peer))
				}
				continue
			}
			a, b := tok, tok
			if i := strings.IndexByte(tok, '-'); i >= 0 {
				a, b = tok[:i], tok[i+1:]
			}
			start, err1 := strconv.Atoi(a)
			stop, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil || start < 0 || start >= slots.Count || stop < 0 || stop >= slots.Count {
				return nil, ErrCorruptConfig
			}
			for j := start; j <= stop; j++ {
				s.addSlot(n, j)
			}
		}
	}
	if s.myself == nil {
		return nil, ErrCorruptConfig
	}
	// myself first: deterministic output and iteration.
	for i, n := range s.order {
		if n == s.myself {
			copy(s.order[1:i+1], s.order[:i])
			s.order[0] = n
			break
		}
	}
	if opts.NoFailover {
		s.myself.flags |= FlagNoFailover
	}
	if max := s.maxEpoch(); max > s.currentEpoch {
		s.currentEpoch = max
	}
	s.fo.Restarted() // no vote while this view may be stale (failover.Machine.voteGrace)
	s.todoUpdateState = true
	return s, nil
}

// atoi is C's atoi: leading digits, 0 when none.
func atoi(s string) int {
	v := 0
	neg := false
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if v > 1<<31 {
			break
		}
		v = v*10 + int(s[i]-'0')
	}
	if neg {
		return -v
	}
	return v
}

// WriteConfigFile writes data to path. With fsync it is atomic and durable:
// a temporary file in the same directory, on disk before it is renamed over
// path, and the directory synced after (epochs and votes must be durable
// before they are acted on). Without, the file is rewritten in place and
// left to the OS, as Redis's clusterSaveConfig does for every other change:
// a temporary file and a rename per SETSLOT cost a redis-cli reshard or fix
// about a millisecond per command.
func WriteConfigFile(path string, data []byte, fsync bool) error {
	return writeConfigFile(path, data, fsync, nil)
}

// writeConfigFile is WriteConfigFile keeping lock (nil: none) on the file
// at path: the temporary file is locked before it is renamed over path.
func writeConfigFile(path string, data []byte, fsync bool, lock *configLock) error {
	if !fsync {
		return overwriteFile(path, data)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	if err := lock.lockNew(f); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	if lock != nil {
		lock.adopt(f) // f stays open: its lock is now nodes.conf's
	} else if err := f.Close(); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// overwriteFile rewrites path in place (no fsync): one open, write and
// truncate.
func overwriteFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Truncate(int64(len(data))); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
