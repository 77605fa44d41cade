package str

import (
	"math"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/store"
)

// cmdLCS: LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN].
//
// The longest common subsequence by the classic dynamic programme over a
// (len(a)+1)×(len(b)+1) table, walked back from the end to produce the
// string or the matching ranges, in the order and shape Redis 7.0 replies
// them (ranges from the end of the strings towards their start).
func cmdLCS(c *command.Ctx, args [][]byte) {
	db := c.DB()
	ea, eb := db.Find(args[1]), db.Find(args[2])
	if ea != nil && ea.Type() != store.TypeString || eb != nil && eb.Type() != store.TypeString {
		c.Error("ERR The specified keys must contain string values")
		return
	}
	var a, b []byte
	if ea != nil {
		a = ea.Bytes()
	}
	if eb != nil {
		b = eb.Bytes()
	}
	var getLen, getIdx, withMatchLen bool
	var minMatchLen int64
	for i := 3; i < len(args); i++ {
		opt := args[i]
		switch {
		case command.ArgIs(opt, "idx"):
			getIdx = true
		case command.ArgIs(opt, "len"):
			getLen = true
		case command.ArgIs(opt, "withmatchlen"):
			withMatchLen = true
		case command.ArgIs(opt, "minmatchlen") && i+1 < len(args):
			v, ok := command.ParseInt64(args[i+1])
			if !ok {
				c.ErrNotInteger()
				return
			}
			minMatchLen = max(v, 0)
			i++
		default:
			c.ErrSyntax()
			return
		}
	}
	if getLen && getIdx {
		c.Error("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	if uint64(len(a)) >= math.MaxUint32-1 || uint64(len(b)) >= math.MaxUint32-1 {
		c.Error("ERR String too long for LCS")
		return
	}
	alen, blen := len(a), len(b)
	cells := uint64(alen+1) * uint64(blen+1)
	if cells*4 > uint64(c.Session().ProtoMaxBulkLen()) {
		c.Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	// Row-major: lcs[i*(blen+1)+j] is the LCS length of a[:i] and b[:j].
	width := blen + 1
	lcs := make([]uint32, cells)
	for i := 1; i <= alen; i++ {
		row, prev := lcs[i*width:(i+1)*width], lcs[(i-1)*width:i*width]
		ai := a[i-1]
		for j := 1; j <= blen; j++ {
			switch {
			case ai == b[j-1]:
				row[j] = prev[j-1] + 1
			case prev[j] > row[j-1]:
				row[j] = prev[j]
			default:
				row[j] = row[j-1]
			}
		}
	}
	total := lcs[alen*width+blen]

	if getLen {
		c.Int(int64(total))
		return
	}

	// Walk back from the end. Without IDX this only collects the string;
	// with IDX it emits each maximal run of consecutive matches as soon as
	// the run ends.
	result := make([]byte, total)
	var matches []lcsMatch
	idx := total
	const unset = -1
	aStart, aEnd, bStart, bEnd := unset, 0, 0, 0
	i, j := alen, blen
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			switch {
			case aStart == unset:
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			case aStart == i && bStart == j:
				aStart--
				bStart--
			default:
				emit = true
			}
			if aStart == 0 || bStart == 0 {
				emit = true // the run reached the start of a string
			}
			idx--
			i--
			j--
		} else {
			if lcs[(i-1)*width+j] > lcs[i*width+j-1] {
				i--
			} else {
				j--
			}
			if aStart != unset {
				emit = true
			}
		}
		if emit {
			n := aEnd - aStart + 1
			if getIdx && (minMatchLen == 0 || int64(n) >= minMatchLen) {
				matches = append(matches, lcsMatch{aStart, aEnd, bStart, bEnd, n})
			}
			aStart = unset
		}
	}

	if !getIdx {
		c.Bulk(result)
		return
	}
	c.Map(2)
	c.BulkString("matches")
	c.Array(len(matches))
	for _, m := range matches {
		if withMatchLen {
			c.Array(3)
		} else {
			c.Array(2)
		}
		c.Array(2)
		c.Int(int64(m.aStart))
		c.Int(int64(m.aEnd))
		c.Array(2)
		c.Int(int64(m.bStart))
		c.Int(int64(m.bEnd))
		if withMatchLen {
			c.Int(int64(m.n))
		}
	}
	c.BulkString("len")
	c.Int(int64(total))
}

type lcsMatch struct{ aStart, aEnd, bStart, bEnd, n int }
