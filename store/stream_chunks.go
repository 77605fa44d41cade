package store

import "slices"

// idChunks is an ordered set of records keyed by stream ID: a list of
// sorted chunks of at most idChunkMax records each. The consumer-group
// pending entries lists use it: they are mostly appended to at the end
// (messages are delivered in ID order) and removed from near the front
// (acknowledged in about the same order), but XCLAIM and XGROUP SETID can
// insert anywhere. A chunk is a plain slice of records, so when the record
// type holds no pointers (pelEntry, pelID) the garbage collector sees one
// pointer per chunk, not one per pending message.
//
// Lookups are O(log n); an insert or delete moves at most idChunkMax
// records, plus the chunk headers when a chunk splits, merges or empties.
type idChunks[T idKeyed] struct {
	chunks [][]T // non-empty, sorted, each chunk's keys below the next chunk's
	n      int
}

// idKeyed is a record with a stream ID key.
type idKeyed interface {
	key() StreamID
}

const (
	idChunkMax = 128
	// idChunkMerge: a chunk that shrinks below this is merged with a
	// neighbour when both fit in one chunk, so that deletions cannot leave
	// a long list of nearly empty chunks behind.
	idChunkMerge = idChunkMax / 4
)

// Len is the number of records.
func (c *idChunks[T]) Len() int { return c.n }

// locate returns the chunk that holds id or would hold it (the first chunk
// whose last key is >= id; len(chunks) if id is above every key) and the
// position of the first record >= id inside it.
func (c *idChunks[T]) locate(id StreamID) (ci, i int) {
	ci, _ = slices.BinarySearchFunc(c.chunks, id, func(ch []T, id StreamID) int {
		return ch[len(ch)-1].key().Compare(id)
	})
	if ci == len(c.chunks) {
		return ci, 0
	}
	i, _ = slices.BinarySearchFunc(c.chunks[ci], id, func(r T, id StreamID) int {
		return r.key().Compare(id)
	})
	return ci, i
}

// Get returns a pointer to the record with key id, or nil. The pointer is
// valid until the set is next modified.
func (c *idChunks[T]) Get(id StreamID) *T {
	ci, i := c.locate(id)
	if ci == len(c.chunks) {
		return nil
	}
	if r := &c.chunks[ci][i]; (*r).key() == id {
		return r
	}
	return nil
}

// Insert adds r unless a record with its key exists; it reports whether it
// did.
func (c *idChunks[T]) Insert(r T) bool {
	id := r.key()
	ci, i := c.locate(id)
	if ci == len(c.chunks) {
		// Above every key: append, starting a new chunk when the last one
		// is full (appends then leave full chunks behind, not half ones).
		if ci > 0 && len(c.chunks[ci-1]) < idChunkMax {
			c.chunks[ci-1] = append(c.chunks[ci-1], r)
		} else {
			ch := make([]T, 1, 8)
			ch[0] = r
			c.chunks = append(c.chunks, ch)
		}
		c.n++
		return true
	}
	ch := c.chunks[ci]
	if ch[i].key() == id {
		return false
	}
	if len(ch) < idChunkMax {
		c.chunks[ci] = slices.Insert(ch, i, r)
		c.n++
		return true
	}
	// Split the full chunk in two halves, then insert into the right one.
	half := len(ch) / 2
	right := make([]T, len(ch)-half, idChunkMax)
	copy(right, ch[half:])
	left := slices.Clip(ch[:half])
	clear(ch[half:])
	if i <= half {
		left = slices.Insert(left, i, r)
	} else {
		right = slices.Insert(right, i-half, r)
	}
	c.chunks[ci] = left
	c.chunks = slices.Insert(c.chunks, ci+1, right)
	c.n++
	return true
}

// Delete removes the record with key id; it reports whether there was one.
func (c *idChunks[T]) Delete(id StreamID) bool {
	ci, i := c.locate(id)
	if ci == len(c.chunks) || c.chunks[ci][i].key() != id {
		return false
	}
	ch := slices.Delete(c.chunks[ci], i, i+1)
	c.n--
	switch {
	case len(ch) == 0:
		c.chunks = slices.Delete(c.chunks, ci, ci+1)
	case len(ch) < idChunkMerge:
		c.chunks[ci] = ch
		c.mergeSmall(ci)
	default:
		c.chunks[ci] = ch
	}
	return true
}

// mergeSmall merges chunk ci into a neighbour when the two fit in one.
func (c *idChunks[T]) mergeSmall(ci int) {
	switch {
	case ci > 0 && len(c.chunks[ci-1])+len(c.chunks[ci]) <= idChunkMax:
		c.chunks[ci-1] = append(c.chunks[ci-1], c.chunks[ci]...)
		c.chunks = slices.Delete(c.chunks, ci, ci+1)
	case ci+1 < len(c.chunks) && len(c.chunks[ci])+len(c.chunks[ci+1]) <= idChunkMax:
		c.chunks[ci] = append(c.chunks[ci], c.chunks[ci+1]...)
		c.chunks = slices.Delete(c.chunks, ci+1, ci+2)
	}
}

// Seek returns a pointer to the first record whose key is >= id, or nil.
// The pointer is valid until the set is next modified.
func (c *idChunks[T]) Seek(id StreamID) *T {
	ci, i := c.locate(id)
	if ci == len(c.chunks) {
		return nil
	}
	return &c.chunks[ci][i]
}

// First and Last return the lowest and highest records, or nil.
func (c *idChunks[T]) First() *T {
	if c.n == 0 {
		return nil
	}
	return &c.chunks[0][0]
}

func (c *idChunks[T]) Last() *T {
	if c.n == 0 {
		return nil
	}
	ch := c.chunks[len(c.chunks)-1]
	return &ch[len(ch)-1]
}

// Each calls fn for every record in key order until fn returns false. fn
// must not modify the set.
func (c *idChunks[T]) Each(fn func(r *T) bool) {
	for _, ch := range c.chunks {
		for i := range ch {
			if !fn(&ch[i]) {
				return
			}
		}
	}
}

// clone returns an independent copy (records are copied by value).
func (c *idChunks[T]) clone() idChunks[T] {
	out := idChunks[T]{chunks: make([][]T, len(c.chunks)), n: c.n}
	for i, ch := range c.chunks {
		out.chunks[i] = slices.Clone(ch)
	}
	return out
}

// chunkCount is the number of chunks (memory estimates, tests).
func (c *idChunks[T]) chunkCount() int { return len(c.chunks) }
