package config

import (
	"errors"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"syscall"

	"github.com/shoal-db/shoal/strconvx"
)

func isHexDigit(b byte) bool {
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

func hexValue(b byte) byte {
	switch {
	case b >= '0' && b <= '9':
		return b - '0'
	case b >= 'a' && b <= 'f':
		return b - 'a' + 10
	default:
		return b - 'A' + 10
	}
}

// asciiLower lower-cases ASCII letters only (like C tolower in the C locale).
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// SplitArgs splits a line into arguments exactly like Redis's sdssplitargs():
// arguments are separated by blanks; "double quoted" arguments understand the
// escapes \n \r \t \b \a \\ \" and \xHH; 'single quoted' arguments only
// understand \'. A closing quote must be followed by a blank or the end of
// the line. ok is false for unbalanced quotes (Redis returns NULL). A NUL
// byte ends the line, as it does in C.
func SplitArgs(line string) (args []string, ok bool) {
	if i := strings.IndexByte(line, 0); i >= 0 {
		line = line[:i]
	}
	p := 0
	n := len(line)
	at := func(i int) byte {
		if i < n {
			return line[i]
		}
		return 0
	}
	args = []string{}
	for {
		for p < n && strconvx.IsCSpace(line[p]) {
			p++
		}
		if p >= n {
			return args, true
		}
		var cur []byte
		inq, insq, done := false, false, false
		for !done {
			c := at(p)
			switch {
			case inq:
				if c == '\\' && at(p+1) == 'x' && isHexDigit(at(p+2)) && isHexDigit(at(p+3)) {
					cur = append(cur, hexValue(at(p+2))*16+hexValue(at(p+3)))
					p += 3
				} else if c == '\\' && at(p+1) != 0 {
					p++
					var e byte
					switch at(p) {
					case 'n':
						e = '\n'
					case 'r':
						e = '\r'
					case 't':
						e = '\t'
					case 'b':
						e = '\b'
					case 'a':
						e = '\a'
					default:
						e = at(p)
					}
					cur = append(cur, e)
				} else if c == '"' {
					if at(p+1) != 0 && !strconvx.IsCSpace(at(p+1)) {
						return nil, false
					}
					done = true
				} else if c == 0 {
					return nil, false
				} else {
					cur = append(cur, c)
				}
			case insq:
				if c == '\\' && at(p+1) == '\'' {
					p++
					cur = append(cur, '\'')
				} else if c == '\'' {
					if at(p+1) != 0 && !strconvx.IsCSpace(at(p+1)) {
						return nil, false
					}
					done = true
				} else if c == 0 {
					return nil, false
				} else {
					cur = append(cur, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					done = true
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if at(p) != 0 {
				p++
			}
		}
		args = append(args, string(cur))
	}
}

// Repr quotes s like Redis's sdscatrepr() (strconvx.AppendRepr); the
// result can be read back with SplitArgs.
func Repr(s string) string {
	return string(strconvx.AppendRepr(make([]byte, 0, len(s)+2), []byte(s)))
}

// splitBySpace splits s on single spaces like sdssplitlen(s, " "): an empty
// string gives no elements, consecutive spaces give empty elements.
func splitBySpace(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, " ")
}

// trimSet removes leading and trailing bytes contained in cset (sdstrim).
func trimSet(s, cset string) string {
	return strings.Trim(s, cset)
}

// cStrtoll emulates C's strtoll(s, &end, base) for base 8 or 10: leading
// spaces and a sign are accepted; with no digits the value is 0 and end is 0;
// overflow saturates and sets erange.
func cStrtoll(s string, base int) (val int64, end int, erange bool) {
	p := 0
	for p < len(s) && strconvx.IsCSpace(s[p]) {
		p++
	}
	neg := false
	if p < len(s) && (s[p] == '+' || s[p] == '-') {
		neg = s[p] == '-'
		p++
	}
	start := p
	var acc uint64
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	for p < len(s) {
		c := s[p]
		var d uint64
		if c >= '0' && c <= '9' {
			d = uint64(c - '0')
		} else {
			break
		}
		if int(d) >= base {
			break
		}
		if !erange {
			if acc > (limit-d)/uint64(base) {
				erange = true
				acc = limit
			} else {
				acc = acc*uint64(base) + d
			}
		}
		p++
	}
	if p == start {
		return 0, 0, false
	}
	if neg {
		return -int64(acc), p, erange
	}
	return int64(acc), p, erange
}

// strtollFull is strtoll() followed by the "*eptr == '\0'" check Redis uses
// in several places (overflow is not detected there, just like Redis).
func strtollFull(s string) (int64, bool) {
	v, end, _ := cStrtoll(s, 10)
	return v, end == len(s)
}

// MemToULL is memtoull for the server's commands that take memory amounts
// (DEBUG QUICKLIST-PACKED-THRESHOLD).
func MemToULL(s string) (uint64, bool) { return memtoull(s) }

// memtoull parses a memory amount like Redis's memtoull(): digits followed
// by an optional unit b, k, kb, m, mb, g, gb (case-insensitive). As in Redis
// an empty number counts as 0 and overflow is not detected.
func memtoull(s string) (uint64, bool) {
	if strings.HasPrefix(s, "-") {
		return 0, false
	}
	u := 0
	for u < len(s) && s[u] >= '0' && s[u] <= '9' {
		u++
	}
	var mul uint64
	switch strings.ToLower(s[u:]) {
	case "", "b":
		mul = 1
	case "k":
		mul = 1000
	case "kb":
		mul = 1024
	case "m":
		mul = 1000 * 1000
	case "mb":
		mul = 1024 * 1024
	case "g":
		mul = 1000 * 1000 * 1000
	case "gb":
		mul = 1024 * 1024 * 1024
	default:
		return 0, false
	}
	if u >= 128 {
		return 0, false
	}
	var val uint64
	for i := 0; i < u; i++ {
		d := uint64(s[i] - '0')
		if val > (math.MaxUint64-d)/10 {
			val = math.MaxUint64
			break
		}
		val = val*10 + d
	}
	return val * mul, true
}

// formatMemory writes a byte amount using gb/mb/kb when it is an exact
// multiple, like rewriteConfigFormatMemory().
func formatMemory(v uint64) string {
	const kb, mb, gb = 1024, 1024 * 1024, 1024 * 1024 * 1024
	switch {
	case v != 0 && v%gb == 0:
		return strconv.FormatUint(v/gb, 10) + "gb"
	case v != 0 && v%mb == 0:
		return strconv.FormatUint(v/mb, 10) + "mb"
	case v != 0 && v%kb == 0:
		return strconv.FormatUint(v/kb, 10) + "kb"
	default:
		return strconv.FormatUint(v, 10)
	}
}

// string2d parses a double like Redis's string2d() (strtod based).
func string2d(s string) (float64, bool) {
	if len(s) == 0 || strconvx.IsCSpace(s[0]) || strings.ContainsRune(s, '_') {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, false // HUGE_VAL or underflow to zero
		}
		return 0, false
	}
	if math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// formatPercentile formats a float like sprintf("%f") + trimDoubleString().
// FormatPercentile writes a percentile as Redis does ("%f" with trailing
// zeros and point trimmed): 50, 99.9.
func FormatPercentile(f float64) string {
	s := strconv.FormatFloat(f, 'f', 6, 64)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	return s
}

// strerror returns the C library (glibc) message for the errno behind err,
// e.g. "No such file or directory".
func strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOENT:
			return "No such file or directory"
		case syscall.EACCES:
			return "Permission denied"
		case syscall.EISDIR:
			return "Is a directory"
		case syscall.ENOTDIR:
			return "Not a directory"
		case syscall.ELOOP:
			return "Too many levels of symbolic links"
		case syscall.ENAMETOOLONG:
			return "File name too long"
		case syscall.EROFS:
			return "Read-only file system"
		case syscall.ENOSPC:
			return "No space left on device"
		case syscall.EEXIST:
			return "File exists"
		case syscall.EPERM:
			return "Operation not permitted"
		case syscall.EMFILE:
			return "Too many open files"
		case syscall.EIO:
			return "Input/output error"
		}
		msg := errno.Error()
		if msg != "" {
			return strings.ToUpper(msg[:1]) + msg[1:]
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "No such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "Permission denied"
	}
	return err.Error()
}
