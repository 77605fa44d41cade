package node

// snapshotArena holds the copies of string keys that clients capture for a
// snapshot (rdbSnapshotSink) outside the Go heap. A rewrite that starts
// under a write load has clients capture most slots within a fraction of
// a second, tens of MB of copies that live only until the snapshot's
// goroutine writes them: on the heap, that burst brought the next
// collection forward into the rewrite and made the clients pay for it in
// assists (a collection of ~1 s of CPU where one outside a rewrite cost
// 0.2 s). Here the copies do not count toward the collector's goal, and a
// block goes back to the OS as soon as its last chunk is written, as a
// fork child's copied pages do when it exits. The buffers hold no
// pointers. Not safe for concurrent use: the sink calls it under its lock.
type snapshotArena struct {
	cur    *arenaBlock
	blocks map[*arenaBlock]struct{}
}

// arenaBlock is one mapping; live counts the buffers handed out of it and
// not yet released.
type arenaBlock struct {
	mem  []byte
	used int
	live int
}

// arenaBlockSize is the size of a shared block; a buffer larger than a
// quarter of it gets a mapping of its own.
const arenaBlockSize = 4 << 20

// alloc returns a buffer of length 0 and capacity n and the block it
// belongs to, or nil, nil when memory cannot be mapped (the caller then
// uses the heap).
func (a *snapshotArena) alloc(n int) ([]byte, *arenaBlock) {
	if n > arenaBlockSize/4 {
		b := a.mapBlock(n)
		if b == nil {
			return nil, nil
		}
		b.used, b.live = n, 1
		return b.mem[:0:n], b
	}
	if a.cur == nil || len(a.cur.mem)-a.cur.used < n {
		if old := a.cur; old != nil {
			a.cur = nil
			if old.live == 0 {
				a.unmap(old)
			}
		}
		if a.cur = a.mapBlock(arenaBlockSize); a.cur == nil {
			return nil, nil
		}
	}
	b := a.cur
	buf := b.mem[b.used : b.used : b.used+n]
	b.used += n
	b.live++
	return buf, b
}

// release gives back a buffer of b; the block is unmapped when it was its
// last and no more are cut from it.
func (a *snapshotArena) release(b *arenaBlock) {
	b.live--
	if b.live == 0 && b != a.cur {
		a.unmap(b)
	}
}

// freeAll unmaps every block, whatever it still holds: nothing may touch
// the arena's buffers afterwards.
func (a *snapshotArena) freeAll() {
	for b := range a.blocks {
		a.unmap(b)
	}
	a.cur = nil
}

func (a *snapshotArena) mapBlock(n int) *arenaBlock {
	mem := mapAnonymous(n)
	if mem == nil {
		return nil
	}
	b := &arenaBlock{mem: mem}
	if a.blocks == nil {
		a.blocks = map[*arenaBlock]struct{}{}
	}
	a.blocks[b] = struct{}{}
	return b
}

func (a *snapshotArena) unmap(b *arenaBlock) {
	delete(a.blocks, b)
	unmapAnonymous(b.mem)
	b.mem = nil
}
