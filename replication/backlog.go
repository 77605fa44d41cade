// Package replication is the byte side of Redis replication: the
// replication IDs and offset, the backlog ring, the fan-out of the
// write-effect stream to replica connections without ever blocking a writer,
// and the reader of a master's stream on a replica. It knows nothing about
// commands or the keyspace: the node encodes effects and applies what a
// replica reads (the package must not parse client commands itself).
package replication

// Backlog is a fixed-size ring holding the last bytes of the replication
// stream, so that a replica that lost its link can continue from its offset
// (PSYNC +CONTINUE) instead of a full sync.
//
// The ring is made of backlogChunk-byte blocks allocated when first
// written, as Redis 7 grows its replication buffer block by block: a master
// that wrote 10 KB holds one block, not repl-backlog-size (1 MB by
// default). One array of the whole size would cost that much RSS at once
// whenever the Go allocator hands out reused pages, which it must zero.
//
// Offsets are Redis's: the stream's bytes are numbered from 1, and End is
// master_repl_offset, the number of the last byte written. The ring holds
// bytes First() .. End(). Backlog is not safe for concurrent use; Master
// guards it.
type Backlog struct {
	chunks  [][]byte // ring position p is chunks[p/backlogChunk][p%backlogChunk]; nil until written
	size    int
	pos     int   // where the next byte goes
	histlen int   // valid bytes in the ring (≤ size)
	end     int64 // offset of the last byte written
}

// backlogChunk is the size of one block of the ring (Redis's
// PROTO_REPLY_CHUNK_BYTES).
const backlogChunk = 16 << 10

// NewBacklog returns an empty ring of size bytes whose next byte will be
// offset end+1.
func NewBacklog(size int, end int64) *Backlog {
	b := &Backlog{end: end}
	b.reset(size)
	return b
}

// reset empties the ring and sets its capacity.
func (b *Backlog) reset(size int) {
	size = max(size, 1)
	b.chunks = make([][]byte, (size+backlogChunk-1)/backlogChunk)
	b.size, b.pos, b.histlen = size, 0, 0
}

// Size is the ring's capacity (repl-backlog-size).
func (b *Backlog) Size() int { return b.size }

// Histlen is the number of valid bytes (repl_backlog_histlen).
func (b *Backlog) Histlen() int { return b.histlen }

// End is the offset of the last byte written (master_repl_offset).
func (b *Backlog) End() int64 { return b.end }

// First is the offset of the oldest byte held
// (repl_backlog_first_byte_offset); End()+1 when empty.
func (b *Backlog) First() int64 { return b.end - int64(b.histlen) + 1 }

// Write appends p, overwriting the oldest bytes when the ring is full.
func (b *Backlog) Write(p []byte) {
	b.end += int64(len(p))
	if len(p) >= b.size {
		// Only the tail fits.
		b.copyIn(0, p[len(p)-b.size:])
		b.pos = 0
		b.histlen = b.size
		return
	}
	n := min(len(p), b.size-b.pos)
	b.copyIn(b.pos, p[:n])
	b.copyIn(0, p[n:])
	b.pos = (b.pos + len(p)) % b.size
	b.histlen = min(b.histlen+len(p), b.size)
}

// copyIn writes p at ring position pos; pos+len(p) must not pass the end
// of the ring. It allocates the blocks it is the first to write.
func (b *Backlog) copyIn(pos int, p []byte) {
	for len(p) > 0 {
		i := pos / backlogChunk
		c := b.chunks[i]
		if c == nil {
			c = make([]byte, min(backlogChunk, b.size-i*backlogChunk))
			b.chunks[i] = c
		}
		n := copy(c[pos%backlogChunk:], p)
		p = p[n:]
		pos += n
	}
}

// appendRange appends the n bytes at ring position pos (held bytes, so
// their blocks exist); pos+n must not pass the end of the ring.
func (b *Backlog) appendRange(dst []byte, pos, n int) []byte {
	for n > 0 {
		c := b.chunks[pos/backlogChunk]
		off := pos % backlogChunk
		k := min(n, len(c)-off)
		dst = append(dst, c[off:off+k]...)
		pos += k
		n -= k
	}
	return dst
}

// Contains reports whether a replica may continue from offset from (the
// first byte it wants): the bytes from .. End() are all held. from ==
// End()+1 (nothing missing) is accepted.
func (b *Backlog) Contains(from int64) bool {
	return from >= b.First() && from <= b.end+1
}

// AppendFrom appends the bytes from offset from to End() to dst. from must
// satisfy Contains.
func (b *Backlog) AppendFrom(dst []byte, from int64) []byte {
	n := int(b.end - from + 1)
	if n <= 0 {
		return dst
	}
	start := (b.pos - n + b.size) % b.size
	if start+n <= b.size {
		return b.appendRange(dst, start, n)
	}
	dst = b.appendRange(dst, start, b.size-start)
	return b.appendRange(dst, 0, n-(b.size-start))
}

// Resize changes the capacity to size, keeping the newest bytes that fit
// (CONFIG SET repl-backlog-size).
func (b *Backlog) Resize(size int) {
	if size < 1 || size == b.size {
		return
	}
	keep := min(b.histlen, size)
	data := b.AppendFrom(make([]byte, 0, keep), b.end-int64(keep)+1)
	b.reset(size)
	b.copyIn(0, data)
	b.pos = len(data) % size
	b.histlen = len(data)
}

// Rebase moves the ring's offsets by delta (the bytes held are unchanged):
// a master's start-up backlog, written from offset 0 while loading, then
// placed after the loaded file's offset.
func (b *Backlog) Rebase(delta int64) { b.end += delta }
