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
	r     *bufio.Reader
	lim   StreamLimits
	raw   []byte // the bytes of the last command read
	spans []span // where the last command's arguments are in raw
}

// span is an argument's position in StreamReader.raw.
type span struct{ at, n int }

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
	if n := s.r.Buffered(); n > 0 {
		// A command already whole in the buffer is taken where it lies
		// (the stream is mostly that): no copy, no line-by-line reads.
		buf, _ := s.r.Peek(n)
		if out, used, ok := s.parseBuffered(buf, args); ok {
			_, _ = s.r.Discard(used)
			return out, buf[:used:used], nil
		}
	}
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
	spans := s.spans[:0]
	defer func() { s.spans = spans[:0] }()
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

// parseBuffered parses one command that lies whole at the start of buf, in
// the canonical form a master writes ("*<n>\r\n" then "$<len>\r\n<arg>\r\n"
// n times, plain decimal counts): the arguments alias buf, and used is the
// command's length. Anything else — a command not yet whole, a keep-alive
// newline first, a malformed or over-limit count — is left to the
// line-by-line reader (ok false), which decides on it as before.
func (s *StreamReader) parseBuffered(buf []byte, args [][]byte) (out [][]byte, used int, ok bool) {
	if len(buf) == 0 || buf[0] != '*' {
		return nil, 0, false
	}
	argc, pos, ok := parseCountLine(buf, 1)
	if !ok || argc < 1 || argc > int64(s.lim.MaxArgs) {
		return nil, 0, false
	}
	out = args[:0]
	for i := int64(0); i < argc; i++ {
		if pos >= len(buf) || buf[pos] != '$' {
			return nil, 0, false
		}
		n, at, ok := parseCountLine(buf, pos+1)
		if !ok || n > s.lim.MaxBulkLen || int64(len(buf)-at) < n+2 {
			return nil, 0, false
		}
		end := at + int(n)
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return nil, 0, false
		}
		out = append(out, buf[at:end:end])
		pos = end + 2
	}
	return out, pos, true
}

// parseCountLine reads the decimal digits of buf from i up to "\r\n" and
// returns the number and the position after the line; ok is false without
// digits, with another byte, past 18 digits, or when the line is not whole.
func parseCountLine(buf []byte, i int) (n int64, next int, ok bool) {
	start := i
	for i < len(buf) && buf[i] >= '0' && buf[i] <= '9' {
		if i-start >= 18 {
			return 0, 0, false
		}
		n = n*10 + int64(buf[i]-'0')
		i++
	}
	if i == start || i+1 >= len(buf) || buf[i] != '\r' || buf[i+1] != '\n' {
		return 0, 0, false
	}
	return n, i + 2, true
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

// SelectedAfter is the database a stream is in after cmds, which start in
// db: the last SELECT among them names it (a transaction or script that
// changed databases leaves the stream in the last one, as Redis's
// propagation does), else db.
func SelectedAfter(db int, cmds [][][]byte) int {
	for i := len(cmds) - 1; i >= 0; i-- {
		if argv := cmds[i]; len(argv) == 2 && len(argv[0]) == 6 && strings.EqualFold(string(argv[0]), "select") {
			if n, err := strconv.Atoi(string(argv[1])); err == nil {
				return n
			}
		}
	}
	return db
}
