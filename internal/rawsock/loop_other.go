//go:build !linux

package rawsock

import "errors"

// ErrWouldBlock is a loop-mode Read's answer when the socket holds nothing.
var ErrWouldBlock = errors.New("rawsock: no input yet")

// Poller is only built on Linux; elsewhere NewPoller fails and every
// connection is served by its own goroutine.
type Poller struct{}

// NewPoller fails: there is no event loop here.
func NewPoller() (*Poller, error) { return nil, errors.New("rawsock: no poller on this system") }

func (p *Poller) Add(*Conn, uint64) error             { return errors.New("rawsock: no poller") }
func (p *Poller) Remove(*Conn) error                  { return nil }
func (p *Poller) Wake()                               {}
func (p *Poller) Stop()                               {}
func (p *Poller) Run(func([]uint64, bool) bool) error { return nil }
func (c *Conn) EnterLoop() bool                       { return false }
func (c *Conn) ExitLoop()                             {}
func (c *Conn) Drained() bool                         { return false }
func (c *Conn) TryWrite(b []byte) (int, error)        { return c.TCPConn.Write(b) }
