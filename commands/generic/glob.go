package generic

// A copy of node/keys_glob.go (which HSCAN, SSCAN, ZSCAN, PSUBSCRIBE and
// FUNCTION LIST still use) while the matcher moves to a leaf package: KEYS
// and SCAN here cannot import node. One of the two goes when that lands.

// keyGlob is a KEYS / SCAN MATCH pattern with the semantics of Redis 7.0's
// stringmatchlen() (util.c) for case-sensitive matching:
//
//   - '*' matches any run of bytes, '?' any one byte;
//   - '[...]' one byte from a set: '^' first negates it, "a-z" is a range
//     (ends in either order, compared as signed chars like Redis on x86),
//     '\x' is a literal x; a set left open runs to the end of the pattern;
//   - '\x' outside a set is a literal x; a trailing '\' is a literal '\';
//   - an empty string matches only the empty pattern (Redis's loop never
//     runs, so even "*" does not match "").
//
// Every token but '*' consumes exactly one byte, so instead of recursing at
// each '*' as Redis does, match remembers only the last '*' seen and, on a
// mismatch, lets it absorb one more byte: the classic wildcard algorithm,
// O(len(pattern) * len(key)) in the worst case, constant stack, whatever the
// number of stars.
type keyGlob struct {
	pat string
}

// at returns pattern byte i, or 0 past the end: Redis reads the sds
// terminator there, and several of its checks depend on that.
func (g keyGlob) at(i int) byte {
	if i < len(g.pat) {
		return g.pat[i]
	}
	return 0
}

// matchOne matches the single-byte token at g.pat[i] (not '*') against c. It
// returns the index just past the token and whether c matched.
func (g keyGlob) matchOne(i int, c byte) (int, bool) {
	switch g.pat[i] {
	case '?':
		return i + 1, true
	case '\\':
		if len(g.pat)-i >= 2 {
			i++
		}
		return i + 1, g.pat[i] == c
	case '[':
		return g.matchSet(i+1, c)
	default:
		return i + 1, g.pat[i] == c
	}
}

// matchSet matches c against the set starting at g.pat[i] (just after '[').
// It always scans to the set's end, whether c matched or not.
func (g keyGlob) matchSet(i int, c byte) (int, bool) {
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
			if int8(c) >= lo && int8(c) <= hi {
				match = true
			}
			i += 2
		default:
			if g.pat[i] == c {
				match = true
			}
		}
		i++
	}
}

// match reports whether key matches the pattern.
func (g keyGlob) match(key string) bool {
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
