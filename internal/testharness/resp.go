package testharness

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// maxDepth bounds the nesting ReadRaw and ReadValue follow: a reply from a
// broken server must not recurse without end.
const maxDepth = 64

// ReadRaw copies one complete RESP2/RESP3 reply from r to w, byte for byte
// (so that a test can compare it with what Redis sends).
func ReadRaw(r *bufio.Reader, w *bytes.Buffer) error {
	return readRaw(r, w, 0)
}

func readRaw(r *bufio.Reader, w *bytes.Buffer, depth int) error {
	if depth > maxDepth {
		return errors.New("RESP reply nested too deep")
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return fmt.Errorf("malformed RESP line %q", line)
	}
	w.WriteString(line)
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', '-', ':', ',', '#', '_', '(':
		return nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if n < 0 {
			return nil
		}
		_, err = io.CopyN(w, r, int64(n)+2)
		return err
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range n {
			if err := readRaw(r, w, depth+1); err != nil {
				return err
			}
		}
		if line[0] == '|' { // an attribute precedes the real reply
			return readRaw(r, w, depth+1)
		}
		return nil
	}
	return fmt.Errorf("unknown RESP type in %q", line)
}

// ErrorReply is an error reply (its text without the leading '-') as
// ReadValue returns it.
type ErrorReply string

func (e ErrorReply) Error() string { return string(e) }

// ReadValue decodes one RESP2 reply: a status or bulk string is a string,
// an integer an int64, an array []any, a null bulk or array nil, and an
// error reply an ErrorReply value (not a read error).
func ReadValue(r *bufio.Reader) (any, error) {
	return readValue(r, 0)
}

// ParseValue is ReadValue over a reply held in a string.
func ParseValue(raw string) (any, error) {
	return ReadValue(bufio.NewReader(strings.NewReader(raw)))
}

func readValue(r *bufio.Reader, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("RESP reply nested too deep")
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return ErrorReply(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil {
			return nil, err
		}
		if n < 0 {
			return nil, nil
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readValue(r, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// Reply is a parsed RESP2/RESP3 reply, for comparisons that normalize or
// reorder parts of it.
type Reply struct {
	Kind byte   // the RESP type byte
	Str  string // a bulk's payload (also of '=' and '!'), else the line after the type byte
	// Null marks a null bulk ($-1); a null aggregate (*-1) is an
	// aggregate with no elements.
	Null  bool
	Elems []Reply // an aggregate's elements; a map's ('%') keys and values in turn
}

// ReadReply reads one reply.
func ReadReply(r *bufio.Reader) (Reply, error) {
	return readReply(r, 0)
}

// ParseReply parses the reply held in raw, failing the test when it is
// not one.
func ParseReply(t testing.TB, raw string) Reply {
	t.Helper()
	v, err := ReadReply(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatalf("parse %q: %v", raw, err)
	}
	return v
}

func readReply(r *bufio.Reader, depth int) (Reply, error) {
	if depth > maxDepth {
		return Reply{}, errors.New("RESP reply nested too deep")
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return Reply{}, err
	}
	if len(line) < 3 {
		return Reply{}, fmt.Errorf("short line %q", line)
	}
	v := Reply{Kind: line[0]}
	body := line[1 : len(line)-2]
	switch v.Kind {
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil {
			return v, err
		}
		if n < 0 {
			v.Null = true
			return v, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return v, err
		}
		v.Str = string(buf[:n])
	case '*', '%', '~', '>':
		n, err := strconv.Atoi(body)
		if err != nil {
			return v, err
		}
		if v.Kind == '%' {
			n *= 2
		}
		for range max(n, 0) {
			e, err := readReply(r, depth+1)
			if err != nil {
				return v, err
			}
			v.Elems = append(v.Elems, e)
		}
	default:
		v.Str = body
	}
	return v, nil
}
