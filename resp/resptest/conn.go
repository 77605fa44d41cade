// Package resptest holds test doubles for code that reads requests from,
// or writes replies to, a net.Conn.
package resptest

import (
	"bytes"
	"net"
	"time"
)

// Conn is an in-memory net.Conn: it serves a fixed input in pieces of
// Chunk bytes per Read (0 means 7, so that every partial-read state of a
// parser is exercised) and records what is written to it. Deadlines are
// accepted and ignored. A Conn is used by one goroutine.
type Conn struct {
	In    *bytes.Reader
	Out   bytes.Buffer
	Chunk int
}

// NewConn serves in, chunk bytes per Read.
func NewConn(in []byte, chunk int) *Conn {
	return &Conn{In: bytes.NewReader(in), Chunk: chunk}
}

func (c *Conn) Read(p []byte) (int, error) {
	chunk := c.Chunk
	if chunk == 0 {
		chunk = 7
	}
	if len(p) > chunk {
		p = p[:chunk]
	}
	return c.In.Read(p)
}

func (c *Conn) Write(p []byte) (int, error) { return c.Out.Write(p) }
func (c *Conn) Close() error                { return nil }

// LocalAddr is 127.0.0.1:6379.
func (c *Conn) LocalAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 6379} }

// RemoteAddr is 127.0.0.1:50000.
func (c *Conn) RemoteAddr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000} }

func (c *Conn) SetDeadline(time.Time) error      { return nil }
func (c *Conn) SetReadDeadline(time.Time) error  { return nil }
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }
