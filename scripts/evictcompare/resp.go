package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
)

type conn struct {
	nc  net.Conn
	r   *bufio.Reader
	out []byte
}

func dial(addr string) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}, nil
}

func (c *conn) Close() error { return c.nc.Close() }

// send appends one command to the pipeline.
func (c *conn) send(args ...string) {
	c.out = append(c.out, '*')
	c.out = strconv.AppendInt(c.out, int64(len(args)), 10)
	c.out = append(c.out, "\r\n"...)
	for _, a := range args {
		c.out = append(c.out, '$')
		c.out = strconv.AppendInt(c.out, int64(len(a)), 10)
		c.out = append(c.out, "\r\n"...)
		c.out = append(c.out, a...)
		c.out = append(c.out, "\r\n"...)
	}
}

func (c *conn) flush() error {
	_ = c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	_, err := c.nc.Write(c.out)
	c.out = c.out[:0]
	return err
}

// read decodes one reply (an error reply is a testharness.ErrorReply value).
func (c *conn) read() (any, error) { return testharness.ReadValue(c.r) }

// readRaw is one reply's exact bytes.
func (c *conn) readRaw() (string, error) {
	var b bytes.Buffer
	err := testharness.ReadRaw(c.r, &b)
	return b.String(), err
}

// do sends one command and decodes its reply.
func (c *conn) do(args ...string) (any, error) {
	c.send(args...)
	if err := c.flush(); err != nil {
		return nil, err
	}
	v, err := c.read()
	if err == nil {
		if e, ok := v.(testharness.ErrorReply); ok {
			return nil, fmt.Errorf("%s: %w", args[0], e)
		}
	}
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("%s: connection closed", args[0])
	}
	return v, err
}

// int sends one command whose reply is an integer.
func (c *conn) int(args ...string) (int64, error) {
	v, err := c.do(args...)
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("%s: not an integer: %v", args[0], v)
	}
	return n, nil
}
