package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ReplyReader reads the replies of another server shoal sends commands to
// (a MIGRATE target, an atomic slot migration's target): whole replies
// skipped with only their error text kept (SkipReply), or single status
// lines (ReadLine). Lines are bounded by MaxReplyLine and the buffer size;
// bulk payloads are discarded, never buffered whole.
type ReplyReader struct {
	r *bufio.Reader
}

// NewReplyReader reads from r through a buffer of size bytes.
func NewReplyReader(r io.Reader, size int) *ReplyReader {
	return &ReplyReader{r: bufio.NewReaderSize(r, size)}
}

// Buffered is the number of bytes read from r and not yet consumed.
func (rr *ReplyReader) Buffered() int { return rr.r.Buffered() }

// ReadLine reads one reply line without its terminator, as Redis's
// connSyncReadLine does: the line ends at "\n" (a "\r" before it is
// dropped), may be longer than the buffer up to MaxReplyLine, and must not
// be empty. Errors from the underlying reader come back as they are (a
// deadline's os.ErrDeadlineExceeded included).
func (rr *ReplyReader) ReadLine() (string, error) {
	var line []byte
	for {
		chunk, isPrefix, err := rr.r.ReadLine()
		if err != nil {
			return "", err
		}
		line = append(line, chunk...)
		if len(line) > MaxReplyLine {
			return "", errors.New("reply line too long")
		}
		if !isPrefix {
			break
		}
	}
	if len(line) == 0 {
		return "", errors.New("empty reply line")
	}
	return string(line), nil
}

// MaxReplyLine bounds a reply line a ReplyReader accepts (type byte,
// length or status text).
const MaxReplyLine = 64 << 10

// ReadText reads a status, integer, error or bulk reply (RESP2's simple
// replies): status and integer replies come back as their text, a bulk
// reply as its payload ("" for the null bulk), an error reply as an error
// holding its text. A bulk longer than maxBulk is refused before anything
// is allocated for it.
func (rr *ReplyReader) ReadText(maxBulk int) (string, error) {
	line, err := rr.ReadLine()
	if err != nil {
		return "", err
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", errors.New(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil || n < -1 || n > maxBulk {
			return "", fmt.Errorf("bad bulk length %q", line)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(rr.r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return "", fmt.Errorf("unexpected reply %q", line)
}

// SkipReply reads one RESP2/RESP3 reply and reports whether it is an error
// (with its text; inside an aggregate, the first one). Bulk payloads are
// skipped without being kept. Reply lines must end in CRLF.
func (rr *ReplyReader) SkipReply() (isErr bool, msg string, err error) {
	return rr.skipReply(0)
}

// MaxReplyDepth bounds the nesting of aggregates SkipReply follows: the
// servers shoal talks to answer shallow replies, and a hostile one must not
// drive the recursion without bound.
const MaxReplyDepth = 64

func (rr *ReplyReader) skipReply(depth int) (isErr bool, msg string, err error) {
	r := rr.r
	line, err := readReplyLine(r)
	if err != nil {
		return false, "", err
	}
	if len(line) == 0 {
		return false, "", errors.New("empty reply line")
	}
	switch line[0] {
	case '-', '!':
		if line[0] == '!' {
			n, err := strconv.Atoi(string(line[1:]))
			if err != nil || n < 0 {
				return false, "", errors.New("bad blob error length")
			}
			b := make([]byte, min(n, MaxReplyLine))
			if _, err := io.ReadFull(r, b); err != nil {
				return false, "", err
			}
			if _, err := r.Discard(n - len(b) + 2); err != nil {
				return false, "", err
			}
			return true, string(b), nil
		}
		return true, string(line[1:]), nil
	case '+', ':', ',', '#', '_', '(':
		return false, "", nil
	case '$', '=':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return false, "", errors.New("bad bulk length")
		}
		if n >= 0 {
			if _, err := r.Discard(n + 2); err != nil {
				return false, "", err
			}
		}
		return false, "", nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return false, "", errors.New("bad aggregate length")
		}
		if n > 0 && depth >= MaxReplyDepth {
			return false, "", errors.New("reply nested too deeply")
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for i := 0; i < n; i++ {
			// An error inside an aggregate (EXEC's) fails the job too.
			e, m, err := rr.skipReply(depth + 1)
			if err != nil {
				return false, "", err
			}
			if e && !isErr {
				isErr, msg = true, m
			}
		}
		return isErr, msg, nil
	}
	return false, "", fmt.Errorf("unknown reply type %q", line[0])
}

// readReplyLine reads a CRLF-terminated line of at most the reader's
// buffer size and returns it without the CRLF (it aliases the buffer).
func readReplyLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, errors.New("reply line too long")
	}
	if err != nil {
		return nil, err
	}
	if len(line) < 2 || line[len(line)-2] != '\r' {
		return nil, errors.New("malformed reply line")
	}
	return line[:len(line)-2], nil
}
