package aof

import "errors"

// Errors of ReadCommands, the outcomes loadSingleAppendOnlyFile tells apart.
var (
	// ErrTruncated is a file that ends inside a command.
	ErrTruncated = errors.New("unexpected end of file")
	// ErrFormat is a file that is not a sequence of RESP commands.
	ErrFormat = errors.New("bad file format")
)

// annotationLineMax is AOF_ANNOTATION_LINE_MAX_LEN: the buffer each line
// ("*<argc>", "$<len>", "#..." annotations) is read into.
const annotationLineMax = 1024

// ReadCommands walks the RESP commands of data from offset start, as
// loadSingleAppendOnlyFile reads them: lines starting with '#' are
// annotations (skipped), a command is "*<argc>" then argc "$<len>" bulk
// arguments each followed by two bytes. fn receives each command's
// arguments (valid only during the call) and the offset just past it; an
// error it returns stops the walk and is returned as is. The walk fails
// with ErrFormat on a malformed line and ErrTruncated when data ends inside
// a command; the offset returned is then where the last whole command
// ended.
func ReadCommands(data []byte, start int, fn func(args [][]byte, end int) error) (int, error) {
	pos := start
	valid := start
	var args [][]byte
	for {
		line, next, ok := fgets(data, pos)
		if !ok {
			return valid, nil // EOF between commands
		}
		pos = next
		if line[0] == '#' {
			continue
		}
		if line[0] != '*' {
			return valid, ErrFormat
		}
		if len(line) == 1 {
			return valid, ErrTruncated // "*" at EOF (fgets: buf[1] == '\0')
		}
		argc := atoi(line[1:])
		if argc < 1 {
			return valid, ErrFormat
		}
		// Each argument takes at least "$0\r\n\r\n": bound the
		// allocation by what the file can hold.
		if rest := (len(data) - pos) / 6; argc > rest+1 {
			args = make([][]byte, 0, rest+1)
		} else {
			args = make([][]byte, 0, argc)
		}
		for range argc {
			line, next, ok := fgets(data, pos)
			if !ok {
				return valid, ErrTruncated
			}
			if line[0] != '$' {
				return valid, ErrFormat
			}
			pos = next
			n := strtol(line[1:])
			if n < 0 {
				return valid, ErrFormat // no file holds such a length
			}
			if int64(len(data)-pos) < n {
				return valid, ErrTruncated
			}
			args = append(args, data[pos:pos+int(n)])
			pos += int(n)
			if len(data)-pos < 2 {
				return valid, ErrTruncated
			}
			pos += 2 // the CRLF, not checked (fread of two bytes)
		}
		if err := fn(args, pos); err != nil {
			return valid, err
		}
		valid = pos
	}
}

// fgets reads one line as C's fgets into a annotationLineMax buffer: up to
// and including '\n', at most annotationLineMax-1 bytes. ok is false at
// the end of data.
func fgets(data []byte, pos int) (line []byte, next int, ok bool) {
	if pos >= len(data) {
		return nil, pos, false
	}
	end := pos
	for end < len(data) && end-pos < annotationLineMax-1 {
		end++
		if data[end-1] == '\n' {
			break
		}
	}
	return data[pos:end], end, true
}

// atoi is C's atoi on a line ("*3\r\n" → 3).
func atoi(b []byte) int {
	v := atoll(string(b))
	if v > 1<<31-1 || v < -1<<31 {
		return -1
	}
	return int(v)
}

// strtol is C's strtol on a length line, -1 for a length no file holds.
func strtol(b []byte) int64 {
	v, overflow := cInt(string(b))
	if overflow {
		return -1
	}
	return v
}
