package resp

// SplitCanonical splits the first command of b, which RequestReader.ReadBatch
// handed out, into its arguments: it appends them to args[:0] (in place when
// args has the capacity) and returns them with the bytes after the command.
// ok is false when b does not start with a whole command in canonical form
// ("*<n>\r\n" then n times "$<len>\r\n<payload>\r\n", plain decimal counts).
//
// A batch holds canonical commands only (the reader checked each against
// every limit and rewrote any other form), so this parses nothing twice: it
// reads the counts and steps over the payloads, about a sixth of the
// instructions of redcon.ReadNextCommand, which accepts any form and
// re-validates every byte. It still checks every bound, so a batch that is
// not what the reader hands out fails instead of being misread. The
// arguments alias b.
func SplitCanonical(b []byte, args [][]byte) (cmd [][]byte, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '*' {
		return nil, b, false
	}
	argc, i, ok := splitCount(b, 1)
	if !ok || argc <= 0 {
		return nil, b, false
	}
	cmd = args[:0]
	for range argc {
		if i >= len(b) || b[i] != '$' {
			return nil, b, false
		}
		var n int
		if n, i, ok = splitCount(b, i+1); !ok {
			return nil, b, false
		}
		end := i + n
		if end < i || end+2 > len(b) || b[end] != '\r' || b[end+1] != '\n' {
			return nil, b, false
		}
		cmd = append(cmd, b[i:end:end])
		i = end + 2
	}
	return cmd, b[i:], true
}

// splitCount reads the plain decimal count at b[i:] (at most 18 digits) and
// its CRLF, returning the count and the index after the CRLF.
func splitCount(b []byte, i int) (n, next int, ok bool) {
	start := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
	}
	if i == start || i-start > 18 || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, 0, false
	}
	return n, i + 2, true
}
