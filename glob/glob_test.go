package glob

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestMatchCases(t *testing.T) {
	cases := []struct {
		pat, s string
		nocase bool
		want   bool
	}{
		{"*", "", false, false}, // like Redis: an empty string never enters the match loop
		{"", "", false, true}, {"", "a", false, false},
		{"*", "abc", false, true}, {"**", "abc", false, true}, {"a*", "a", false, true}, {"*a", "a", false, true},
		{"a*b", "ab", false, true}, {"a*b", "acb", false, true}, {"a*b", "acbd", false, false},
		{"a*c", "abbbc", false, true}, {"a*c", "abbbd", false, false}, {"a**c", "ac", false, true},
		{"?", "a", false, true}, {"?", "", false, false}, {"??", "a", false, false}, {"a?c", "abc", false, true},
		{"h[ae]llo", "hello", false, true}, {"h[ae]llo", "hillo", false, false},
		{"h[^e]llo", "hallo", false, true}, {"h[^e]llo", "hello", false, false},
		{"h[a-b]llo", "hbllo", false, true}, {"h[b-a]llo", "hbllo", false, true}, {"h[a-b]llo", "hcllo", false, false},
		{`h\*llo`, "h*llo", false, true}, {`h\*llo`, "hallo", false, false}, {`a\`, `a\`, false, true},
		{`[\]]`, "]", false, true}, {`[\`, `\`, false, true}, {"[abc", "b", false, true}, {"[abc", "d", false, false},
		{"[", "x", false, false}, {"[^", "x", false, true}, {"[]", "]", false, false}, {"[]]", "]", false, false},
		{"[a-]", "]", false, true}, {"[a-", "-", false, true},
		{"*[", "ab", false, false}, {"a*?", "a", false, false}, {"a*?", "ab", false, true},
		{"*-*-*", "a-b-c", false, true}, {"*-*-*", "a-b", false, false},
		// Range ends compare as signed chars (x86-64), as Redis does.
		{"[\x80-a]", "b", false, false}, {"[\x80-a]", "A", false, true}, {"[\x80-a]", "\xff", false, true},
		{"[a-\xff]", "A", false, true}, {"[a-\xff]", "b", false, false},
		{"?[\x11-\xd2\x1d", "\xd2\x06", false, true}, {"[\xed-\\", "\xb4", false, false},
		// nocase: ASCII letters only; a range is put in order before its
		// ends are lowered; an escaped byte in a set keeps its case.
		{"MAX*", "maxmemory", true, true}, {"MAX*", "maxmemory", false, false},
		{"[A-C]*", "bind", true, true}, {"[M]axmemory", "maxmemory", true, true},
		{`\M*`, "max", true, true}, {`[\M]*`, "max", true, false}, {`[\M]*`, "Max", true, true},
		{"[a-Z]", "b", true, false}, {"[a-Z]", "z", true, false}, {"[Z-a]", "z", true, false},
		{"\xc9", "\xe9", true, false},
	}
	for _, tc := range cases {
		if got := Match(tc.pat, tc.s, tc.nocase); got != tc.want {
			t.Errorf("Match(%q, %q, nocase=%v) = %v, want %v", tc.pat, tc.s, tc.nocase, got, tc.want)
		}
	}
}

// reference is Redis 7.0's stringmatchlen as the recursion it is written
// as (one call per '*', cut short by skipLongerMatches): the oracle the
// iterative Match is checked against.
func reference(pattern, str string, nocase bool, skipLonger *bool) bool {
	pi, si := 0, 0
	plen, slen := len(pattern), len(str)
	pat := func(i int) byte {
		if i < plen {
			return pattern[i]
		}
		return 0
	}
	lower := func(b byte) byte {
		if nocase && b >= 'A' && b <= 'Z' {
			return b + 32
		}
		return b
	}
	for pi < plen && si < slen {
		switch pattern[pi] {
		case '*':
			for pi < plen && pat(pi+1) == '*' {
				pi++
			}
			if plen-pi == 1 {
				return true
			}
			for ; si < slen; si++ {
				if reference(pattern[pi+1:], str[si:], nocase, skipLonger) {
					return true
				}
				if *skipLonger {
					return false
				}
			}
			*skipLonger = true
			return false
		case '?':
		case '[':
			pi++
			not := pat(pi) == '^'
			if not {
				pi++
			}
			match := false
			for {
				if pat(pi) == '\\' && plen-pi >= 2 {
					pi++
					match = match || pat(pi) == str[si]
				} else if pat(pi) == ']' {
					break
				} else if plen-pi <= 0 {
					pi--
					break
				} else if plen-pi >= 3 && pat(pi+1) == '-' {
					lo, hi := int(int8(pat(pi))), int(int8(pat(pi+2)))
					if lo > hi {
						lo, hi = hi, lo
					}
					c := int(int8(lower(str[si])))
					lo, hi = int(int8(lower(byte(lo)))), int(int8(lower(byte(hi))))
					pi += 2
					match = match || c >= lo && c <= hi
				} else {
					match = match || lower(pat(pi)) == lower(str[si])
				}
				pi++
			}
			if match == not {
				return false
			}
		case '\\':
			if plen-pi >= 2 {
				pi++
			}
			fallthrough
		default:
			if lower(pat(pi)) != lower(str[si]) {
				return false
			}
		}
		si++
		pi++
		if si >= slen {
			for pi < plen && pattern[pi] == '*' {
				pi++
			}
			break
		}
	}
	return pi >= plen && si >= slen
}

// TestMatchRandom compares Match with the recursive reference on random
// patterns over a small alphabet full of special bytes, and over all bytes.
func TestMatchRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const patAlpha = "abAB*?[]^-\\zZ\x80\xff"
	const strAlpha = "abAB]-^\\*zZ[\x80\xff"
	for i := 0; i < 300000; i++ {
		p := make([]byte, rng.IntN(10))
		for j := range p {
			if i%4 == 3 {
				p[j] = byte(rng.IntN(256))
			} else {
				p[j] = patAlpha[rng.IntN(len(patAlpha))]
			}
		}
		s := make([]byte, rng.IntN(8))
		for j := range s {
			if i%4 == 3 {
				s[j] = byte(rng.IntN(256))
			} else {
				s[j] = strAlpha[rng.IntN(len(strAlpha))]
			}
		}
		nocase := rng.IntN(2) == 0
		skip := false
		want := reference(string(p), string(s), nocase, &skip)
		if got := Match(string(p), string(s), nocase); got != want {
			t.Fatalf("Match(%q, %q, nocase=%v) = %v, reference %v", p, s, nocase, got, want)
		}
		compiled := Compile(string(p), nocase)
		if got := compiled.Match(string(s)); got != want {
			t.Fatalf("Compile(%q, nocase=%v).Match(%q) = %v, reference %v", p, nocase, s, got, want)
		}
	}
}

// TestMatchPathological: patterns that make a naive backtracking matcher
// exponential stay fast, and many stars use no stack.
func TestMatchPathological(t *testing.T) {
	key := strings.Repeat("a", 4000)
	pat := strings.Repeat("a*", 2000) + "b"
	start := time.Now()
	if Match(pat, key, false) {
		t.Fatal("matched without the b")
	}
	if !Match(strings.Repeat("*", 1<<20)+"a", "xxa", false) {
		t.Fatal("a million stars then a did not match xxa")
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %v", time.Since(start))
	}
}

// TestCompiledStarPatterns compares a compiled pattern of literals and
// stars (the fast path) with Match on every pattern and string up to a
// length over a small alphabet, the empty ones included.
func TestCompiledStarPatterns(t *testing.T) {
	all := func(alpha string, maxLen int) []string {
		out := []string{""}
		for prev := []string{""}; maxLen > 0; maxLen-- {
			var next []string
			for _, p := range prev {
				for _, c := range alpha {
					next = append(next, p+string(c))
				}
			}
			out, prev = append(out, next...), next
		}
		return out
	}
	strs := all("ab", 5)
	checked := 0
	for _, nocase := range []bool{false, true} {
		for _, pat := range all("ab*", 6) {
			p := Compile(pat, nocase)
			if !nocase && !p.simple {
				t.Fatalf("Compile(%q) took the general path", pat)
			}
			for _, s := range append(strs, "AB", "aB*") {
				if got, want := p.Match(s), Match(pat, s, nocase); got != want {
					t.Fatalf("Compile(%q, nocase=%v).Match(%q) = %v, Match %v", pat, nocase, s, got, want)
				}
				checked++
			}
		}
	}
	if p := Compile("__key*__:*", false); !p.Match("__keyspace@0__:k") || !p.Match("__keyevent@0__:set") ||
		p.Match("__keyspace@0__") || p.Match("") {
		t.Fatal("the keyspace-notification pattern")
	}
	t.Logf("%d pairs", checked)
}

func BenchmarkCompiledMatch(b *testing.B) {
	p := Compile("__key*__:*", false)
	for range b.N {
		p.Match("__keyspace@0__:key:000000123456")
	}
}

func BenchmarkMatch(b *testing.B) {
	for range b.N {
		Match("user:*:session[0-9]?", "user:12345:session7x", false)
	}
}
