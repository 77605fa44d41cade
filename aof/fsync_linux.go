package aof

import (
	"os"
	"syscall"
)

// fdatasync is redis_fsync on Linux: the data, not the metadata that does
// not matter for reading it back.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}

// fdatasyncHolding is fdatasync that keeps the processor (P) while the
// disk works (RawSyscall: the runtime is not told a call is under way).
// Group commit's leader (Appender.syncAll) uses it. With a normal call on
// the node's one core, the runtime's monitor notices the blocked thread,
// wakes another to take the core, and when the fsync returns the leader's
// thread finds the core taken, parks, and the leader — whose round every
// waiting client needs — queues behind the clients that ran meanwhile:
// thread wake-ups on every round and a later release of the round.
// Holding the core is what Redis's one thread does under appendfsync
// always (its fsync blocks the event loop); SET -P 16 used 11-21% less
// server CPU per request with it. The cost is Redis's too: nothing else
// runs on that core until the fsync returns.
func fdatasyncHolding(f *os.File) error {
	fd := f.Fd()
	for {
		_, _, errno := syscall.RawSyscall(syscall.SYS_FDATASYNC, fd, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: errno}
		}
	}
}
