//go:build !linux

package rawsock

import "net"

// Conn is only built on Linux; elsewhere Wrap returns the connection as it is.
type Conn struct{ *net.TCPConn }

func wrapTCP(*net.TCPConn) *Conn { return nil }

// WriteBuffers writes bufs with the socket's own writev.
func (c *Conn) WriteBuffers(bufs *net.Buffers) (int64, error) { return bufs.WriteTo(c.TCPConn) }
