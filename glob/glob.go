// Package glob is Redis's glob-style pattern matching (stringmatchlen in
// util.c), the one matcher behind KEYS, SCAN/HSCAN/SSCAN/ZSCAN MATCH,
// PSUBSCRIBE and PUBSUB CHANNELS, FUNCTION LIST LIBRARYNAME, CONFIG GET and
// COMMAND LIST FILTERBY PATTERN.
package glob

import (
	"strings"
	"unicode"
)

// Match reports whether s matches pattern as Redis 7.0's stringmatchlen()
// decides it (nocase: ASCII letters match regardless of case, as C's
// tolower in the "C" locale):
//
//   - '*' matches any run of bytes, '?' any one byte;
//   - '[...]' one byte from a set: '^' first negates it, "a-z" is a range
//     (ends in either order, compared as signed chars like Redis on x86-64;
//     with nocase the ends are lowered after being put in order), '\x' is a
//     literal x compared with its case even with nocase; a set left open
//     runs to the end of the pattern;
//   - '\x' outside a set is a literal x; a trailing '\' is a literal '\';
//   - an empty string matches only the empty pattern (Redis's loop never
//     runs, so even "*" does not match "").
//
// Every token but '*' consumes exactly one byte, so instead of recursing at
// each '*' as Redis does, Match remembers only the last '*' seen and, on a
// mismatch, lets it absorb one more byte: the classic wildcard algorithm,
// O(len(pattern) * len(s)) in the worst case and constant stack, whatever
// the number of stars. Redis 7.0.15's recursion (with its skipLongerMatches
// cut) accepts exactly the same strings; it has no nesting limit, so none
// is needed here.
func Match(pattern, s string, nocase bool) bool {
	g := matcher{pat: pattern, nocase: nocase}
	return g.match(s)
}

type matcher struct {
	pat    string
	nocase bool
}

// lower is C's tolower in the "C" locale when matching without case.
func (g matcher) lower(b byte) byte {
	if g.nocase && b >= 'A' && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}

// at returns pattern byte i, or 0 past the end: Redis reads the sds
// terminator there, and several of its checks depend on that.
func (g matcher) at(i int) byte {
	if i < len(g.pat) {
		return g.pat[i]
	}
	return 0
}

// matchOne matches the single-byte token at g.pat[i] (not '*') against c. It
// returns the index just past the token and whether c matched.
func (g matcher) matchOne(i int, c byte) (int, bool) {
	switch g.pat[i] {
	case '?':
		return i + 1, true
	case '\\':
		if len(g.pat)-i >= 2 {
			i++
		}
		return i + 1, g.lower(g.pat[i]) == g.lower(c)
	case '[':
		return g.matchSet(i+1, c)
	default:
		return i + 1, g.lower(g.pat[i]) == g.lower(c)
	}
}

// matchSet matches c against the set starting at g.pat[i] (just after '[').
// It always scans to the set's end, whether c matched or not.
func (g matcher) matchSet(i int, c byte) (int, bool) {
	not := g.at(i) == '^'
	if not {
		i++
	}
	match := false
	for {
		rest := len(g.pat) - i
		switch {
		case g.at(i) == '\\' && rest >= 2:
			i++
			if g.pat[i] == c {
				match = true
			}
		case g.at(i) == ']' && rest > 0:
			return i + 1, match != not
		case rest <= 0:
			// Unterminated set: it ends with the pattern.
			return len(g.pat), match != not
		case rest >= 3 && g.pat[i+1] == '-':
			lo, hi := int8(g.pat[i]), int8(g.pat[i+2])
			if lo > hi {
				lo, hi = hi, lo
			}
			// tolower leaves the negative (non-ASCII) chars as they are.
			lo, hi, cc := int8(g.lower(byte(lo))), int8(g.lower(byte(hi))), int8(g.lower(c))
			if cc >= lo && cc <= hi {
				match = true
			}
			i += 2
		default:
			if g.lower(g.pat[i]) == g.lower(c) {
				match = true
			}
		}
		i++
	}
}

// match reports whether key matches the pattern.
func (g matcher) match(key string) bool {
	if len(key) == 0 {
		return len(g.pat) == 0
	}
	p, k := 0, 0
	starP, starK := -1, 0 // pattern index after the last '*' run, and where its match ends
	for {
		if k == len(key) {
			for p < len(g.pat) && g.pat[p] == '*' {
				p++
			}
			return p == len(g.pat)
		}
		if p < len(g.pat) && g.pat[p] == '*' {
			for p < len(g.pat) && g.pat[p] == '*' {
				p++
			}
			if p == len(g.pat) {
				return true // a trailing '*' takes the rest of the key
			}
			starP, starK = p, k
			continue
		}
		if p < len(g.pat) {
			if next, ok := g.matchOne(p, key[k]); ok {
				p, k = next, k+1
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starK++
		p, k = starP, starK
	}
}

// Pattern is a pattern prepared once to be matched against many strings,
// as a PSUBSCRIBE pattern is against every channel published (two per
// write with keyspace notifications on). A case-sensitive pattern made of
// literal bytes and '*' only — the usual shape, "__key*__:*" — matches by
// comparing its literal runs (strings.HasPrefix, strings.Index), without
// the byte-by-byte walk; any other pattern falls back to Match.
type Pattern struct {
	pat string
	// simple: case-sensitive, and no byte of the pattern is '?', '[' or
	// '\'. Then parts are the non-empty literal runs between the '*'s, and
	// lead / trail tell whether the pattern starts / ends with '*'.
	nocase      bool
	simple      bool
	star        bool // the pattern holds a '*'
	lead, trail bool
	parts       []string
}

// Compile prepares pattern for Pattern.Match (nocase as for Match).
func Compile(pattern string, nocase bool) Pattern {
	p := Pattern{pat: pattern}
	if nocase && strings.ContainsFunc(pattern, func(r rune) bool { return r < 0x80 && unicode.IsLetter(r) }) ||
		strings.ContainsAny(pattern, `?[\`) {
		p.nocase = nocase
		return p
	}
	p.simple = true
	p.star = strings.IndexByte(pattern, '*') >= 0
	p.lead = strings.HasPrefix(pattern, "*")
	p.trail = strings.HasSuffix(pattern, "*")
	for _, part := range strings.Split(pattern, "*") {
		if part != "" {
			p.parts = append(p.parts, part)
		}
	}
	return p
}

// String is the pattern's text.
func (p *Pattern) String() string { return p.pat }

// Match reports whether s matches the pattern, as Match(pattern, s, nocase)
// does.
func (p *Pattern) Match(s string) bool {
	if !p.simple {
		return Match(p.pat, s, p.nocase)
	}
	if len(s) == 0 {
		return len(p.pat) == 0 // as Match: the empty string matches only the empty pattern
	}
	if !p.star {
		return s == p.pat
	}
	parts := p.parts
	if !p.lead { // the first run is anchored at the start
		if !strings.HasPrefix(s, parts[0]) {
			return false
		}
		s, parts = s[len(parts[0]):], parts[1:]
	}
	if !p.trail { // the last run is anchored at the end, after the first
		last := parts[len(parts)-1]
		if !strings.HasSuffix(s, last) {
			return false
		}
		s, parts = s[:len(s)-len(last)], parts[:len(parts)-1]
	}
	// Each run between two '*'s at its leftmost place: taking the earliest
	// leaves the most room for the runs after it.
	for _, part := range parts {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return true
}
