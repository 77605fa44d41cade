// Package sorting holds SORT and SORT_RO (Redis 7.0's sort.c): sort a
// list, set or sorted set numerically or lexicographically, by the elements
// or by other keys (BY pattern, with "->field" for hash fields), return a
// LIMIT window of the elements or of other keys' values (GET), or store the
// result as a list. Their key procedures stay in node (node/cmd_sort.go).
package sorting

import (
	"bytes"
	"math"
	"slices"
	"strings"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
)

// Handlers returns SORT and SORT_RO by command name.
func Handlers() map[string]command.Handler {
	return map[string]command.Handler{
		"sort":    func(c *command.Ctx, args [][]byte) { sortGeneric(c, args, false) },
		"sort_ro": func(c *command.Ctx, args [][]byte) { sortGeneric(c, args, true) },
	}
}

// sortItem is one element being sorted.
type sortItem struct {
	elem  []byte
	score float64
	cmp   []byte // the BY value for ALPHA sorting
	noCmp bool   // the BY key or field is missing (sorts first)
}

// sortOptions are SORT's parsed arguments.
type sortOptions struct {
	desc, alpha, dontSort bool
	limitStart            int64
	limitCount            int64
	by                    []byte // nil: sort by the elements themselves
	gets                  [][]byte
	store                 []byte
}

// parseSortOptions parses SORT's options as sortCommandGeneric does,
// replying the error itself when they are invalid.
func parseSortOptions(c *command.Ctx, args [][]byte, readonly bool) (sortOptions, bool) {
	o := sortOptions{limitCount: -1}
	cluster := c.Config().ClusterEnabled()
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch {
		case command.ArgIs(args[j], "asc"):
			o.desc = false
		case command.ArgIs(args[j], "desc"):
			o.desc = true
		case command.ArgIs(args[j], "alpha"):
			o.alpha = true
		case command.ArgIs(args[j], "limit") && left >= 2:
			var ok bool
			if o.limitStart, ok = command.ParseInt64(args[j+1]); !ok {
				c.ErrNotInteger()
				return o, false
			}
			if o.limitCount, ok = command.ParseInt64(args[j+2]); !ok {
				c.ErrNotInteger()
				return o, false
			}
			j += 2
		case !readonly && command.ArgIs(args[j], "store") && left >= 1:
			o.store = args[j+1]
			j++
		case command.ArgIs(args[j], "by") && left >= 1:
			o.by = args[j+1]
			// A BY pattern without '*' is constant: nothing to sort by
			// (and, as in Redis, a later BY pattern does not undo that).
			if strings.IndexByte(command.CString(o.by), '*') < 0 {
				o.dontSort = true
			} else {
				if cluster {
					c.Error("ERR BY option of SORT denied in Cluster mode.")
					return o, false
				}
				if !c.Session().FullKeyAccess(args) {
					c.Error("ERR BY option of SORT denied due to insufficient ACL permissions.")
					return o, false
				}
			}
			j++
		case command.ArgIs(args[j], "get") && left >= 1:
			if cluster {
				c.Error("ERR GET option of SORT denied in Cluster mode.")
				return o, false
			}
			if !c.Session().FullKeyAccess(args) {
				c.Error("ERR GET option of SORT denied due to insufficient ACL permissions.")
				return o, false
			}
			o.gets = append(o.gets, args[j+1])
			j++
		default:
			c.ErrSyntax()
			return o, false
		}
	}
	return o, true
}

// patternNeedsLookup reports whether a BY/GET pattern refers to other keys
// (it has a '*' and is not "#").
func patternNeedsLookup(p []byte) bool {
	s := command.CString(p)
	return s != "#" && strings.IndexByte(s, '*') >= 0
}

func sortGeneric(c *command.Ctx, args [][]byte, readonly bool) {
	o, ok := parseSortOptions(c, args, readonly)
	if !ok {
		return
	}
	// BY and GET patterns read keys the dispatcher has not locked: hold the
	// whole database instead, for the command's duration.
	needsAll := !o.dontSort && o.by != nil && patternNeedsLookup(o.by)
	for _, g := range o.gets {
		needsAll = needsAll || patternNeedsLookup(g)
	}
	if needsAll {
		defer c.Session().LockWholeDB()()
	}
	db := c.DB()
	e := db.Find(args[1])
	var typ store.Type = store.TypeList
	if e != nil {
		typ = e.Type()
		if typ != store.TypeList && typ != store.TypeSet && typ != store.TypeZSet {
			c.ErrWrongType()
			return
		}
	}
	// A set in no particular order is sorted when stored or read by a
	// script, so that the result does not depend on the hash table's order.
	if o.dontSort && typ == store.TypeSet && (o.store != nil || c.Session().InScript()) {
		o.dontSort, o.alpha, o.by = false, true, nil
	}
	if e != nil && typ == store.TypeZSet {
		e.ZSet().ConvertToSkiplist()
	}
	vectorLen := 0
	if e != nil {
		vectorLen = e.Value().Len()
	}
	// LIMIT, clamped as Redis clamps it.
	n := int64(vectorLen)
	start := min(max(o.limitStart, 0), n)
	count := min(max(o.limitCount, -1), n)
	end := n - 1
	if count >= 0 {
		end = start + count - 1
	}
	if start >= n {
		start, end = n-1, n-2
	}
	if end >= n {
		end = n - 1
	}

	// Load the elements, copied: STORE may overwrite the sorted key.
	var arena []byte
	var ends []int
	add := func(b []byte) bool {
		arena = append(arena, b...)
		ends = append(ends, len(arena))
		return true
	}
	ranged := (typ == store.TypeList || typ == store.TypeZSet) && o.dontSort
	if ranged && (start != 0 || end != n-1) {
		vectorLen = int(end - start + 1)
	}
	switch {
	case e == nil:
	case typ == store.TypeList && o.dontSort:
		if end >= start && vectorLen > 0 {
			l := e.List()
			if o.desc {
				last := l.Len() - int(start) - 1
				l.Range(last-vectorLen+1, last, true, add)
			} else {
				l.Range(int(start), int(start)+vectorLen-1, false, add)
			}
			end -= start
			start = 0
		}
	case typ == store.TypeList:
		for v := range e.List().All() {
			add(v)
		}
	case typ == store.TypeSet:
		for m := range e.Set().All() {
			add(m)
		}
	case typ == store.TypeZSet && o.dontSort:
		if vectorLen > 0 {
			e.ZSet().RangeByRank(int(start), int(start)+vectorLen-1, o.desc, func(m []byte, _ float64) bool { return add(m) })
		}
		end -= start
		start = 0
	default: // a sorted set, to be sorted
		e.ZSet().Each(false, func(m []byte, _ float64) bool { return add(m) })
	}
	items := make([]sortItem, len(ends))
	prev := 0
	for i, x := range ends {
		items[i].elem = arena[prev:x:x]
		prev = x
	}

	if !o.dontSort {
		convErr := false
		for i := range items {
			it := &items[i]
			byVal := it.elem
			if o.by != nil {
				v, found := sortLookup(c, o.by, it.elem)
				if !found {
					it.noCmp = true
					continue
				}
				byVal = v
			}
			if o.alpha {
				if o.by != nil {
					it.cmp = byVal
				}
				continue
			}
			score, ok := sortScore(byVal)
			if !ok {
				convErr = true
			}
			it.score = score
		}
		if convErr {
			c.Error("ERR One or more scores can't be converted into double")
			return
		}
		cmp := sortComparator(o)
		slices.SortStableFunc(items, cmp)
	}

	outLen := int(end - start + 1)
	if len(o.gets) > 0 {
		outLen *= len(o.gets)
	}
	if o.store == nil {
		c.Array(outLen)
		for j := start; j <= end; j++ {
			it := &items[j]
			if len(o.gets) == 0 {
				c.Bulk(it.elem)
			}
			for _, g := range o.gets {
				if v, found := sortLookup(c, g, it.elem); found {
					c.Bulk(v)
				} else {
					c.Null()
				}
			}
		}
		return
	}
	l := store.NewList(c.Config().Int("list-max-listpack-size"))
	for j := start; j <= end; j++ {
		it := &items[j]
		if len(o.gets) == 0 {
			l.Push(it.elem, false)
			continue
		}
		for _, g := range o.gets {
			v, _ := sortLookup(c, g, it.elem)
			l.Push(v, false) // a missing value is stored as ""
		}
	}
	if outLen > 0 {
		db.SetValue(o.store, l)
		c.SignalKeyReady(o.store)
		c.Dirty(int64(outLen)) // one change per element stored, as Redis
		c.Notify(config.NotifyList, "sortstore", o.store)
	} else if !db.Delete(o.store) {
		c.NoEffect() // nothing stored, nothing deleted: no change
	} else {
		c.Notify(config.NotifyGeneric, "del", o.store)
	}
	c.Int(int64(outLen))
}

// sortComparator is Redis's sortCompare for the options.
func sortComparator(o sortOptions) func(a, b sortItem) int {
	return func(a, b sortItem) int {
		var r int
		switch {
		case !o.alpha:
			switch {
			case a.score > b.score:
				r = 1
			case a.score < b.score:
				r = -1
			default:
				// Equal scores: the elements decide, so the result is
				// deterministic.
				r = bytes.Compare(a.elem, b.elem)
			}
		case o.by != nil:
			switch {
			case a.noCmp || b.noCmp:
				if a.noCmp == b.noCmp {
					r = 0
				} else if a.noCmp {
					r = -1
				} else {
					r = 1
				}
			case o.store != nil:
				r = bytes.Compare(a.cmp, b.cmp)
			default:
				r = strings.Compare(command.CString(a.cmp), command.CString(b.cmp))
			}
		case o.store != nil:
			r = bytes.Compare(a.elem, b.elem)
		default:
			// strcoll in the C locale: C strings, byte order.
			r = strings.Compare(command.CString(a.elem), command.CString(b.elem))
		}
		if o.desc {
			return -r
		}
		return r
	}
}

// sortScore parses a value to sort by as SORT does: strtod over the C
// string must consume all of it, without overflow, and not give NaN.
func sortScore(b []byte) (float64, bool) {
	s := b
	if i := bytes.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	v, n, erange := command.Strtod(s)
	if n != len(s) || erange || math.IsNaN(v) {
		return v, false
	}
	return v, true
}

// sortLookup is Redis's lookupKeyByPattern: "#" is the element itself;
// otherwise the first '*' is replaced by the element, and a "->field"
// after it (with a non-empty field) reads that field of a hash instead of
// a string. A pattern without '*', a missing key or field, or a key of the
// wrong type finds nothing. The returned bytes alias the keyspace.
func sortLookup(c *command.Ctx, pattern, elem []byte) ([]byte, bool) {
	cs := command.CString(pattern) // Redis searches the pattern as a C string
	if cs == "#" {
		return elem, true
	}
	star := strings.IndexByte(cs, '*')
	if star < 0 {
		return nil, false
	}
	var field []byte
	keyEnd := len(pattern)
	if f := strings.Index(cs[star+1:], "->"); f >= 0 {
		at := star + 1 + f
		if at+2 < len(cs) { // something follows "->" (before any NUL)
			field = pattern[at+2:]
			keyEnd = at
		}
	}
	key := make([]byte, 0, keyEnd+len(elem))
	key = append(key, pattern[:star]...)
	key = append(key, elem...)
	key = append(key, pattern[star+1:keyEnd]...)
	e := c.DB().Find(key)
	if e == nil {
		return nil, false
	}
	if field != nil {
		if e.Type() != store.TypeHash {
			return nil, false
		}
		return e.Hash().Get(field)
	}
	if e.Type() != store.TypeString {
		return nil, false
	}
	return e.Bytes(), true
}
