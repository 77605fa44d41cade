package gossip

import (
	"errors"
	"fmt"
	"os"
	"sync"
)

// ConfigInUseError is returned by New when another process (or another Bus
// of this one) holds the lock on the cluster configuration file: two nodes
// on one nodes.conf would run with the same node ID. Its text is Redis's
// (clusterLockConfig); redis-server logs it and exits 1.
type ConfigInUseError struct{ Path string }

func (e *ConfigInUseError) Error() string {
	return fmt.Sprintf("Sorry, the cluster configuration file %s is already used by a different Redis Cluster node. "+
		"Please make sure that different nodes use different cluster configuration files.", e.Path)
}

// configLock holds an exclusive flock on nodes.conf for the life of the Bus,
// as Redis keeps cluster_config_file_lock_fd open until exit. A flock
// belongs to an inode, and an fsynced save replaces the file by a rename
// (WriteConfigFile): the new inode is locked through the temporary file's
// descriptor before the rename (adopt), so the path is never unlocked.
type configLock struct {
	mu       sync.Mutex
	f        *os.File // the locked descriptor; nil once released
	released bool     // a save after Stop must not take the lock again
}

// lockAttempts bounds the retries of lockConfigFile when the file it locked
// was replaced by another node's rename in between (see there).
const lockAttempts = 8

// lockConfigFile opens path (creating it, as Redis does, so that two nodes
// starting at once race on one inode) and takes the lock without waiting.
// If the path was renamed over between open and flock, the lock is on a
// file that is no longer nodes.conf: try again on the current one.
func lockConfigFile(path string) (*configLock, error) {
	for range lockAttempts {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("Can't open %s in order to acquire a lock: %w", path, err)
		}
		if err := flockExclusive(f); err != nil {
			_ = f.Close()
			if errors.Is(err, errWouldBlock) {
				return nil, &ConfigInUseError{Path: path}
			}
			return nil, fmt.Errorf("Impossible to lock %s: %w", path, err)
		}
		same, err := sameFile(f, path)
		if err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("Impossible to lock %s: %w", path, err)
		}
		if same {
			return &configLock{f: f}, nil
		}
		_ = f.Close()
	}
	return nil, fmt.Errorf("Impossible to lock %s: it keeps being replaced", path)
}

// sameFile reports whether the open f is still the file at path.
func sameFile(f *os.File, path string) (bool, error) {
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	pi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, err
	}
	return os.SameFile(fi, pi), nil
}

// lockNew locks tmp, the file about to be renamed over nodes.conf. It is a
// fresh inode nobody else has opened, so the lock cannot be refused.
func (l *configLock) lockNew(tmp *os.File) error {
	if l == nil {
		return nil
	}
	return flockExclusive(tmp)
}

// adopt makes tmp (locked by lockNew and now renamed to nodes.conf) the
// held lock and releases the previous inode's.
func (l *configLock) adopt(tmp *os.File) {
	l.mu.Lock()
	old := l.f
	l.f = tmp
	if l.released {
		old, l.f = tmp, nil
	}
	l.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
}

// release drops the lock (Stop, or a New that failed after locking).
func (l *configLock) release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	f := l.f
	l.f, l.released = nil, true
	l.mu.Unlock()
	if f != nil {
		_ = f.Close()
	}
}
