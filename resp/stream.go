package resp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// ErrStreamProtocol is a StreamReader's error for a malformed stream
// (replication.ErrProtocol is this error).
var ErrStreamProtocol = errors.New("replication: protocol error in the stream")

// StreamLimits bound what a StreamReader allocates for one command; zero
// fields take the defaults (1M arguments, 512 MB per argument).
type StreamLimits struct {
	MaxArgs    int   // arguments per command
	MaxBulkLen int64 // bytes per argument (proto-max-bulk-len)
}

// StreamReader reads a master's replication stream: status lines, the RDB
// payload and then commands, counting the bytes each one took (the replica's
// offset advances by them). Unlike RequestReader it serves a trusted peer:
// no inline commands, and a malformed command fails the link.
type StreamReader struct {
	r   *bufio.Reader
	lim StreamLimits
	raw []byte // the bytes of the last command read
}

// NewStreamReader reads from r with the given bounds.
func NewStreamReader(r io.Reader, lim StreamLimits) *StreamReader {
	if lim.MaxArgs <= 0 {
		lim.MaxArgs = 1024 * 1024
	}
	if lim.MaxBulkLen <= 0 {
		lim.MaxBulkLen = 512 * 1024 * 1024
	}
	return &StreamReader{r: bufio.NewReaderSize(r, 64*1024), lim: lim}
}

// Buffered is the number of bytes read from the connection and not yet
// consumed.
func (s *StreamReader) Buffered() int { return s.r.Buffered() }

// ReadLine reads one "\r\n"-terminated line (without the terminator), as
// the replies of the handshake. Bare "\n" keep-alives sent before the RDB
// payload come back as empty lines.
func (s *StreamReader) ReadLine() (string, error) {
	line, err := s.r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return "", ErrStreamProtocol
		}
		return "", err
	}
	n := len(line) - 1
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	return string(line[:n]), nil
}

// eofMarkLen is the length of a diskless transfer's end mark
// ("$EOF:<40 random characters>").
const eofMarkLen = 40

// ReadPayload reads an RDB transfer and passes its bytes to fn in chunks:
// "$<len>\r\n" then len bytes (no trailing CRLF), or "$EOF:<mark>\r\n"
// then bytes up to the 40-byte mark (a diskless transfer: the master sends
// nothing after the mark before the replica's first ACK, so the mark is
// found at the end of what a read brings, as Redis's replica looks for
// it). "\n" keep-alives before the header are skipped. It returns the
// payload's length.
func (s *StreamReader) ReadPayload(fn func([]byte) error) (int64, error) {
	var line string
	for {
		l, err := s.ReadLine()
		if err != nil {
			return 0, err
		}
		if l != "" {
			line = l
			break
		}
	}
	if len(line) < 2 || line[0] != '$' {
		if len(line) > 0 && line[0] == '-' {
			return 0, fmt.Errorf("replication: master aborted the transfer: %s", line[1:])
		}
		return 0, ErrStreamProtocol
	}
	if strings.HasPrefix(line, "$EOF:") {
		if len(line) < 5+eofMarkLen {
			return 0, ErrStreamProtocol
		}
		return s.readUntilMark([]byte(line[5:5+eofMarkLen]), fn)
	}
	n, err := strconv.ParseInt(line[1:], 10, 64)
	if err != nil || n < 0 {
		return 0, ErrStreamProtocol
	}
	left := n
	buf := make([]byte, min(left, 64*1024))
	for left > 0 {
		k, err := io.ReadFull(s.r, buf[:min(left, int64(len(buf)))])
		if err != nil {
			return 0, err
		}
		if err := fn(buf[:k]); err != nil {
			return 0, err
		}
		left -= int64(k)
	}
	return n, nil
}

// readUntilMark reads a diskless transfer up to its end mark. The last
// eofMarkLen bytes read are held back (they may be the mark).
func (s *StreamReader) readUntilMark(mark []byte, fn func([]byte) error) (int64, error) {
	held := make([]byte, 0, eofMarkLen+64*1024)
	var n int64
	for {
		k, err := s.r.Read(held[len(held):cap(held)])
		if err != nil {
			return 0, err
		}
		held = held[:len(held)+k]
		if len(held) >= eofMarkLen && bytes.Equal(held[len(held)-eofMarkLen:], mark) {
			body := held[:len(held)-eofMarkLen]
			n += int64(len(body))
			if len(body) > 0 {
				if err := fn(body); err != nil {
					return 0, err
				}
			}
			return n, nil
		}
		if len(held) > eofMarkLen {
			body := held[:len(held)-eofMarkLen]
			n += int64(len(body))
			if err := fn(body); err != nil {
				return 0, err
			}
			held = held[:copy(held, held[len(held)-eofMarkLen:])]
		}
	}
}

// ReadCommand reads one multibulk command. It returns the arguments (valid
// until the next call) and the raw bytes the command took in the stream
// (also valid until the next call). Inline newlines between commands are
// counted in the raw bytes of the command that follows them, as a Redis
// replica counts every byte it reads.
func (s *StreamReader) ReadCommand(args [][]byte) ([][]byte, []byte, error) {
	s.raw = s.raw[:0]
	var line []byte
	for {
		l, err := s.readRawLine()
		if err != nil {
			return nil, nil, err
		}
		if len(l) == 0 {
			continue // a keep-alive newline
		}
		line = l
		break
	}
	if line[0] != '*' {
		return nil, nil, ErrStreamProtocol
	}
	argc, err := strconv.ParseInt(string(line[1:]), 10, 64)
	if err != nil || argc < 1 || argc > int64(s.lim.MaxArgs) {
		return nil, nil, ErrStreamProtocol
	}
	// Argument positions are recorded as offsets into raw (it may move).
	type span struct{ at, n int }
	spans := make([]span, 0, min(argc, 64))
	for i := int64(0); i < argc; i++ {
		l, err := s.readRawLine()
		if err != nil {
			return nil, nil, err
		}
		if len(l) < 2 || l[0] != '$' {
			return nil, nil, ErrStreamProtocol
		}
		n, err := strconv.ParseInt(string(l[1:]), 10, 64)
		if err != nil || n < 0 || n > s.lim.MaxBulkLen {
			return nil, nil, ErrStreamProtocol
		}
		at := len(s.raw)
		s.raw = growBy(s.raw, int(n)+2)
		if _, err := io.ReadFull(s.r, s.raw[at:]); err != nil {
			return nil, nil, err
		}
		if s.raw[at+int(n)] != '\r' || s.raw[at+int(n)+1] != '\n' {
			return nil, nil, ErrStreamProtocol
		}
		spans = append(spans, span{at, int(n)})
	}
	args = args[:0]
	for _, sp := range spans {
		args = append(args, s.raw[sp.at:sp.at+sp.n:sp.at+sp.n])
	}
	return args, s.raw, nil
}

// readRawLine reads a line into raw and returns its content without the
// terminator (it aliases raw).
func (s *StreamReader) readRawLine() ([]byte, error) {
	at := len(s.raw)
	for {
		frag, err := s.r.ReadSlice('\n')
		s.raw = append(s.raw, frag...)
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
		if len(s.raw)-at > 64*1024 {
			return nil, ErrStreamProtocol
		}
	}
	l := s.raw[at : len(s.raw)-1]
	if len(l) > 0 && l[len(l)-1] == '\r' {
		l = l[:len(l)-1]
	}
	return l, nil
}

func growBy(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, 2*cap(b)+n)
	copy(nb, b)
	return nb
}
