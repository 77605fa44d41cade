package resp

import (
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-db/shoal/strconvx"
)

// Writer builds replies. A command's reply is built in Out and handed to the
// connection once the command returns (one write per read batch, so a
// pipeline gets one write). Every writer knows the client's protocol
// (Proto, 2 or 3): the RESP3 types degrade to their RESP2 forms exactly as
// Redis 7.0 does.
//
// A Writer is owned by one goroutine (the connection's, or the writer's
// goroutine serving a blocked client's stand-in).
type Writer struct {
	Out   []byte // the reply being built
	Proto int    // 2 or 3
	// OnError, when set, is told of every error reply (the server counts
	// them by code and marks the command failed).
	OnError func(msg string)
}

// OK writes +OK.
func (w *Writer) OK() { w.Out = append(w.Out, "+OK\r\n"...) }

// Status writes a simple string.
func (w *Writer) Status(s string) {
	w.Out = append(w.Out, '+')
	w.Out = append(w.Out, s...)
	w.Out = append(w.Out, '\r', '\n')
}

// Error writes an error reply. msg is the full text including its code
// ("ERR ...", "WRONGTYPE ..."); a leading '-' is tolerated. Newlines are
// replaced by spaces, as Redis does, so the reply stays one line.
func (w *Writer) Error(msg string) {
	msg = strings.TrimPrefix(msg, "-")
	if strings.ContainsAny(msg, "\r\n") {
		msg = strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' {
				return ' '
			}
			return r
		}, msg)
	}
	w.Out = append(w.Out, '-')
	w.Out = append(w.Out, msg...)
	w.Out = append(w.Out, '\r', '\n')
	if w.OnError != nil {
		w.OnError(msg)
	}
}

// Errorf-free helpers for the common texts.
func (w *Writer) ErrSyntax()     { w.Error("ERR syntax error") }
func (w *Writer) ErrNotInteger() { w.Error(MsgNotInteger) }
func (w *Writer) ErrNotFloat()   { w.Error("ERR value is not a valid float") }
func (w *Writer) ErrWrongType()  { w.Error(MsgWrongType) }
func (w *Writer) ErrOverflow()   { w.Error("ERR increment or decrement would overflow") }
func (w *Writer) ErrArity(name string) {
	w.Error("ERR wrong number of arguments for '" + name + "' command")
}

const MsgNotInteger = "ERR value is not an integer or out of range"

const MsgWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// MsgNoSuchKey is the error of a command that needs an existing key.
const MsgNoSuchKey = "ERR no such key"

// Int writes an integer.
func (w *Writer) Int(n int64) {
	w.Out = append(w.Out, ':')
	w.Out = strconv.AppendInt(w.Out, n, 10)
	w.Out = append(w.Out, '\r', '\n')
}

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) {
	w.Out = append(w.Out, '$')
	w.Out = strconv.AppendInt(w.Out, int64(len(b)), 10)
	w.Out = append(w.Out, '\r', '\n')
	w.Out = append(w.Out, b...)
	w.Out = append(w.Out, '\r', '\n')
}

// BulkString writes a bulk string.
func (w *Writer) BulkString(s string) {
	w.Out = append(w.Out, '$')
	w.Out = strconv.AppendInt(w.Out, int64(len(s)), 10)
	w.Out = append(w.Out, '\r', '\n')
	w.Out = append(w.Out, s...)
	w.Out = append(w.Out, '\r', '\n')
}

// BulkInt writes an integer as a bulk string.
func (w *Writer) BulkInt(n int64) {
	var buf [24]byte
	w.Bulk(strconv.AppendInt(buf[:0], n, 10))
}

// Null writes a null bulk string ($-1 in RESP2, _ in RESP3).
func (w *Writer) Null() {
	if w.Proto == 3 {
		w.Out = append(w.Out, "_\r\n"...)
	} else {
		w.Out = append(w.Out, "$-1\r\n"...)
	}
}

// NullArray writes a null array (*-1 in RESP2, _ in RESP3).
func (w *Writer) NullArray() {
	if w.Proto == 3 {
		w.Out = append(w.Out, "_\r\n"...)
	} else {
		w.Out = append(w.Out, "*-1\r\n"...)
	}
}

// Aggregate writes the header of an aggregate of type kind ('*', '%', '|' ...) and n elements.
func (w *Writer) Aggregate(kind byte, n int) {
	w.Out = append(w.Out, kind)
	w.Out = strconv.AppendInt(w.Out, int64(n), 10)
	w.Out = append(w.Out, '\r', '\n')
}

// Array writes an array header for n elements.
func (w *Writer) Array(n int) { w.Aggregate('*', n) }

// Map writes a map header for n key/value pairs (a flat array of 2n in RESP2).
func (w *Writer) Map(n int) {
	if w.Proto == 3 {
		w.Aggregate('%', n)
	} else {
		w.Aggregate('*', 2*n)
	}
}

// Set writes a set header (an array in RESP2).
func (w *Writer) Set(n int) {
	if w.Proto == 3 {
		w.Aggregate('~', n)
	} else {
		w.Aggregate('*', n)
	}
}

// Push writes a push header (an array in RESP2).
func (w *Writer) Push(n int) {
	if w.Proto == 3 {
		w.Aggregate('>', n)
	} else {
		w.Aggregate('*', n)
	}
}

// Bool writes a boolean (#t/#f in RESP3, :1/:0 in RESP2).
func (w *Writer) Bool(b bool) {
	switch {
	case w.Proto == 3 && b:
		w.Out = append(w.Out, "#t\r\n"...)
	case w.Proto == 3:
		w.Out = append(w.Out, "#f\r\n"...)
	case b:
		w.Out = append(w.Out, ":1\r\n"...)
	default:
		w.Out = append(w.Out, ":0\r\n"...)
	}
}

// Double writes a double as Redis 7.0's addReplyDouble does: a RESP3 double,
// or in RESP2 a bulk string with %.17g formatting ("inf"/"-inf").
func (w *Writer) Double(f float64) {
	var buf [32]byte
	w.DoubleText(strconvx.AppendDouble(buf[:0], f))
}

// DoubleText writes s, a double already formatted (by Double's rule or
// another, e.g. GEOPOS's addReplyHumanLongDouble), as a RESP3 double, or
// in RESP2 as a bulk string.
func (w *Writer) DoubleText(s []byte) {
	if w.Proto == 3 {
		w.Out = append(w.Out, ',')
		w.Out = append(w.Out, s...)
		w.Out = append(w.Out, '\r', '\n')
		return
	}
	w.Bulk(s)
}

// Verbatim writes a RESP3 verbatim string of the given 3-letter format
// ("txt", "mkd"); a bulk string in RESP2.
func (w *Writer) Verbatim(s, format string) {
	if w.Proto != 3 {
		w.BulkString(s)
		return
	}
	w.Out = append(w.Out, '=')
	w.Out = strconv.AppendInt(w.Out, int64(len(s)+4), 10)
	w.Out = append(w.Out, '\r', '\n')
	w.Out = append(w.Out, format...)
	w.Out = append(w.Out, ':')
	w.Out = append(w.Out, s...)
	w.Out = append(w.Out, '\r', '\n')
}

// BigNumber writes a RESP3 big number (a bulk string in RESP2).
func (w *Writer) BigNumber(digits string) {
	if w.Proto != 3 {
		w.BulkString(digits)
		return
	}
	w.Out = append(w.Out, '(')
	w.Out = append(w.Out, digits...)
	w.Out = append(w.Out, '\r', '\n')
}

// StringArray writes an array of bulk strings.
func (w *Writer) StringArray(ss []string) {
	w.Array(len(ss))
	for _, s := range ss {
		w.BulkString(s)
	}
}

// StatusArray writes an array of simple strings.
func (w *Writer) StatusArray(ss []string) {
	w.Array(len(ss))
	for _, s := range ss {
		w.Status(s)
	}
}

// InsertArrayHeader inserts an array header for n elements at mark, for
// replies whose length is known only after their elements are written
// (Redis's deferred lengths).
func (w *Writer) InsertArrayHeader(mark int, n int64) {
	w.InsertHeader(mark, '*', n)
}

// InsertMapHeader is insertArrayHeader for a map of n pairs (a flat array
// in RESP2).
func (w *Writer) InsertMapHeader(mark int, n int64) {
	if w.Proto == 3 {
		w.InsertHeader(mark, '%', n)
	} else {
		w.InsertHeader(mark, '*', 2*n)
	}
}

// InsertBulk inserts a bulk string at mark.
func (w *Writer) InsertBulk(mark int, b []byte) {
	h := make([]byte, 0, len(b)+16)
	h = append(h, '$')
	h = strconv.AppendInt(h, int64(len(b)), 10)
	h = append(h, '\r', '\n')
	h = append(h, b...)
	h = append(h, '\r', '\n')
	w.Out = slices.Insert(w.Out, mark, h...)
}

// InsertHeader inserts an aggregate header of type kind for n elements at mark.
func (w *Writer) InsertHeader(mark int, kind byte, n int64) {
	var buf [24]byte
	h := append(buf[:0], kind)
	h = strconv.AppendInt(h, n, 10)
	h = append(h, '\r', '\n')
	w.Out = slices.Insert(w.Out, mark, h...)
}
