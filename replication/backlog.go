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
// Offsets are Redis's: the stream's bytes are numbered from 1, and End is
// master_repl_offset, the number of the last byte written. The ring holds
// bytes First() .. End(). Backlog is not safe for concurrent use; Master
// guards it.
type Backlog struct {
	buf     []byte
	pos     int   // where the next byte goes
	histlen int   // valid bytes in the ring (≤ len(buf))
	end     int64 // offset of the last byte written
}

// NewBacklog returns an empty ring of size bytes whose next byte will be
// offset end+1.
func NewBacklog(size int, end int64) *Backlog {
	if size < 1 {
		size = 1
	}
	return &Backlog{buf: make([]byte, size), end: end}
}

// Size is the ring's capacity (repl-backlog-size).
func (b *Backlog) Size() int { return len(b.buf) }

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
	if len(p) >= len(b.buf) {
		// Only the tail fits.
		copy(b.buf, p[len(p)-len(b.buf):])
		b.pos = 0
		b.histlen = len(b.buf)
		return
	}
	n := copy(b.buf[b.pos:], p)
	if n < len(p) {
		copy(b.buf, p[n:])
	}
	b.pos = (b.pos + len(p)) % len(b.buf)
	b.histlen = min(b.histlen+len(p), len(b.buf))
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
	start := (b.pos - n + len(b.buf)) % len(b.buf)
	if start+n <= len(b.buf) {
		return append(dst, b.buf[start:start+n]...)
	}
	dst = append(dst, b.buf[start:]...)
	return append(dst, b.buf[:n-(len(b.buf)-start)]...)
}

// Resize changes the capacity to size, keeping the newest bytes that fit
// (CONFIG SET repl-backlog-size).
func (b *Backlog) Resize(size int) {
	if size < 1 || size == len(b.buf) {
		return
	}
	keep := min(b.histlen, size)
	data := b.AppendFrom(make([]byte, 0, keep), b.end-int64(keep)+1)
	b.buf = make([]byte, size)
	copy(b.buf, data)
	b.pos = len(data) % size
	b.histlen = len(data)
}

// Rebase moves the ring's offsets by delta (the bytes held are unchanged):
// a master's start-up backlog, written from offset 0 while loading, then
// placed after the loaded file's offset.
func (b *Backlog) Rebase(delta int64) { b.end += delta }
