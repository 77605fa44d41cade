package script

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// cjson: lua-cjson 2.1 as bundled by Redis. Tables with only positive
// integer keys encode as arrays (nil holes as null, refusing excessively
// sparse ones), other tables as objects with string or number keys;
// numbers use %.14g; cjson.null stands for JSON null.

type cjsonConfig struct {
	encodeMaxDepth       int
	decodeMaxDepth       int
	encodeInvalidNumbers bool
	decodeInvalidNumbers bool
	encodePrecision      int
	sparseConvert        bool
	sparseRatio          int
	sparseSafe           int
}

const cjsonNullKey = "cjson.null"

// cjsonNull returns the state's cjson.null sentinel (one per state).
func cjsonNull(L *lua.LState) lua.LValue {
	reg := L.Get(lua.RegistryIndex).(*lua.LTable)
	if v := reg.RawGetString(cjsonNullKey); v != lua.LNil {
		return v
	}
	ud := L.NewUserData()
	reg.RawSetString(cjsonNullKey, ud)
	return ud
}

func cjsonFuncs() map[string]lua.LGFunction {
	cfg := &cjsonConfig{encodeMaxDepth: 1000, decodeMaxDepth: 1000, decodeInvalidNumbers: true,
		encodePrecision: 14, sparseRatio: 2, sparseSafe: 10}
	intOpt := func(p *int, lo, hi int) lua.LGFunction {
		return func(L *lua.LState) int {
			if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
				n := L.CheckInt(1)
				if n < lo || n > hi {
					L.ArgError(1, fmt.Sprintf("expected integer between %d and %d", lo, hi))
				}
				*p = n
			}
			L.Push(lua.LNumber(*p))
			return 1
		}
	}
	boolOpt := func(p *bool) lua.LGFunction {
		return func(L *lua.LState) int {
			if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
				switch v := L.Get(1).(type) {
				case lua.LBool:
					*p = bool(v)
				case lua.LString:
					*p = v == "on"
				default:
					L.ArgError(1, "invalid option")
				}
			}
			L.Push(lua.LBool(*p))
			return 1
		}
	}
	return map[string]lua.LGFunction{
		"encode": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.ArgError(1, "expected 1 argument")
			}
			var b strings.Builder
			cfg.encode(L, &b, L.Get(1), 0)
			L.Push(lua.LString(b.String()))
			return 1
		},
		"decode": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				L.ArgError(1, "expected 1 argument")
			}
			d := cjsonDecoder{L: L, s: L.CheckString(1), cfg: cfg, null: cjsonNull(L)}
			v := d.value(0)
			d.skipSpace()
			if d.pos < len(d.s) {
				d.fail("the end")
			}
			L.Push(v)
			return 1
		},
		"encode_max_depth":        intOpt(&cfg.encodeMaxDepth, 1, math.MaxInt32),
		"decode_max_depth":        intOpt(&cfg.decodeMaxDepth, 1, math.MaxInt32),
		"encode_number_precision": intOpt(&cfg.encodePrecision, 1, 14),
		"encode_invalid_numbers":  boolOpt(&cfg.encodeInvalidNumbers),
		"decode_invalid_numbers":  boolOpt(&cfg.decodeInvalidNumbers),
		"encode_keep_buffer": func(L *lua.LState) int {
			keep := true
			L.Push(lua.LBool(keep))
			return 1
		},
		"encode_sparse_array": func(L *lua.LState) int {
			if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
				cfg.sparseConvert = lua.LVAsBool(L.Get(1))
			}
			if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
				cfg.sparseRatio = L.CheckInt(2)
			}
			if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
				cfg.sparseSafe = L.CheckInt(3)
			}
			L.Push(lua.LBool(cfg.sparseConvert))
			L.Push(lua.LNumber(cfg.sparseRatio))
			L.Push(lua.LNumber(cfg.sparseSafe))
			return 3
		},
	}
}

func (cfg *cjsonConfig) number(L *lua.LState, b *strings.Builder, f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		if !cfg.encodeInvalidNumbers {
			L.RaiseError("Cannot serialise number: must not be NaN or Inf")
		}
		switch {
		case math.IsNaN(f):
			b.WriteString("nan")
		case f > 0:
			b.WriteString("inf")
		default:
			b.WriteString("-inf")
		}
		return
	}
	b.WriteString(FormatG(f, cfg.encodePrecision))
}

// FormatG formats like C's printf("%.<prec>g").
func FormatG(f float64, prec int) string {
	if prec < 1 {
		prec = 1
	}
	if f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	e := strconv.FormatFloat(f, 'e', prec-1, 64)
	i := strings.IndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[i+1:])
	if exp < -4 || exp >= prec {
		mant := e[:i]
		if strings.Contains(mant, ".") {
			mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
		}
		return mant + e[i:]
	}
	s := strconv.FormatFloat(f, 'f', prec-1-exp, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func (cfg *cjsonConfig) encode(L *lua.LState, b *strings.Builder, v lua.LValue, depth int) {
	switch x := v.(type) {
	case lua.LString:
		jsonString(b, string(x))
	case lua.LNumber:
		cfg.number(L, b, float64(x))
	case lua.LBool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case *lua.LNilType:
		b.WriteString("null")
	case *lua.LUserData:
		if v == cjsonNull(L) {
			b.WriteString("null")
			return
		}
		L.RaiseError("Cannot serialise userdata: type not supported")
	case *lua.LTable:
		depth++
		if depth > cfg.encodeMaxDepth {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		n := cfg.arrayLength(L, x)
		if n >= 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				cfg.encode(L, b, x.RawGetInt(i), depth)
			}
			b.WriteByte(']')
			return
		}
		b.WriteByte('{')
		first := true
		ForEach(x, func(k, val lua.LValue) {
			if !first {
				b.WriteByte(',')
			}
			first = false
			switch kk := k.(type) {
			case lua.LString:
				jsonString(b, string(kk))
			case lua.LNumber:
				b.WriteByte('"')
				cfg.number(L, b, float64(kk))
				b.WriteByte('"')
			default:
				L.RaiseError("Cannot serialise %s: table key must be a number or string", k.Type().String())
			}
			b.WriteByte(':')
			cfg.encode(L, b, val, depth)
		})
		b.WriteByte('}')
	default:
		L.RaiseError("Cannot serialise %s: type not supported", v.Type().String())
	}
}

// arrayLength returns the length of t as a JSON array, or -1 when t has a
// key that is not a positive integer (an object).
func (cfg *cjsonConfig) arrayLength(L *lua.LState, t *lua.LTable) int {
	max, items := 0, 0
	isArray := true
	ForEach(t, func(k, _ lua.LValue) {
		if !isArray {
			return
		}
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) < 1 || float64(n) != math.Floor(float64(n)) {
			isArray = false
			return
		}
		if int(n) > max {
			max = int(n)
		}
		items++
	})
	if !isArray {
		return -1
	}
	if cfg.sparseRatio > 0 && max > items*cfg.sparseRatio && max > cfg.sparseSafe {
		if !cfg.sparseConvert {
			L.RaiseError("Cannot serialise table: excessively sparse array")
		}
		return -1
	}
	if max == 0 {
		return -1 // an empty table is an object
	}
	return max
}

func jsonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

type cjsonDecoder struct {
	L    *lua.LState
	s    string
	pos  int
	cfg  *cjsonConfig
	null lua.LValue
}

func (d *cjsonDecoder) fail(expected string) {
	found := "invalid token"
	if d.pos >= len(d.s) {
		found = "T_END"
	}
	d.L.RaiseError("Expected %s but found %s at character %d", expected, found, d.pos+1)
}

func (d *cjsonDecoder) skipSpace() {
	for d.pos < len(d.s) {
		switch d.s[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// nest enters an object or array at d.pos: one level deeper, within
// decode_max_depth.
func (d *cjsonDecoder) nest(depth int) int {
	depth++
	if depth > d.cfg.decodeMaxDepth {
		d.L.RaiseError("Found too many nested data structures (%d) at character %d", depth, d.pos+1)
	}
	d.pos++
	return depth
}

// closes consumes end (after spaces) if it comes next: an empty object or
// array.
func (d *cjsonDecoder) closes(end byte) bool {
	d.skipSpace()
	if d.pos < len(d.s) && d.s[d.pos] == end {
		d.pos++
		return true
	}
	return false
}

// afterItem consumes what follows an object member or array element: a
// comma (false) or the container's end (true); anything else fails with
// what was expected.
func (d *cjsonDecoder) afterItem(end byte, expected string) bool {
	d.skipSpace()
	if d.pos < len(d.s) && d.s[d.pos] == ',' {
		d.pos++
		return false
	}
	if d.closes(end) {
		return true
	}
	d.fail(expected)
	return false
}

func (d *cjsonDecoder) value(depth int) lua.LValue {
	d.skipSpace()
	if d.pos >= len(d.s) {
		d.fail("value")
	}
	switch c := d.s[d.pos]; {
	case c == '{':
		depth = d.nest(depth)
		t := d.L.NewTable()
		if d.closes('}') {
			return t
		}
		for {
			d.skipSpace()
			if d.pos >= len(d.s) || d.s[d.pos] != '"' {
				d.fail("object key string")
			}
			k := d.str()
			d.skipSpace()
			if d.pos >= len(d.s) || d.s[d.pos] != ':' {
				d.fail("colon")
			}
			d.pos++
			v := d.value(depth)
			t.RawSetString(k, v)
			if d.afterItem('}', "comma or object end") {
				return t
			}
		}
	case c == '[':
		depth = d.nest(depth)
		t := d.L.NewTable()
		if d.closes(']') {
			return t
		}
		for i := 1; ; i++ {
			t.RawSetInt(i, d.value(depth))
			if d.afterItem(']', "comma or array end") {
				return t
			}
		}
	case c == '"':
		return lua.LString(d.str())
	case strings.HasPrefix(d.s[d.pos:], "true"):
		d.pos += 4
		return lua.LTrue
	case strings.HasPrefix(d.s[d.pos:], "false"):
		d.pos += 5
		return lua.LFalse
	case strings.HasPrefix(d.s[d.pos:], "null"):
		d.pos += 4
		return d.null
	}
	return d.number()
}

func (d *cjsonDecoder) number() lua.LValue {
	start := d.pos
	for d.pos < len(d.s) && strings.IndexByte("+-0123456789.eExXabcdefABCDEFinftyINFTYN", d.s[d.pos]) >= 0 {
		d.pos++
	}
	tok := d.s[start:d.pos]
	lower := strings.ToLower(tok)
	if strings.Contains(lower, "inf") || strings.Contains(lower, "nan") {
		if !d.cfg.decodeInvalidNumbers {
			d.pos = start
			d.fail("value")
		}
	}
	var f float64
	var err error
	if strings.HasPrefix(strings.TrimLeft(lower, "+-"), "0x") {
		var n int64
		n, err = strconv.ParseInt(lower, 0, 64)
		f = float64(n)
	} else {
		f, err = strconv.ParseFloat(tok, 64)
	}
	if err != nil || tok == "" {
		d.pos = start
		d.fail("value")
	}
	return lua.LNumber(f)
}

func (d *cjsonDecoder) str() string {
	d.pos++ // opening quote
	var b strings.Builder
	for {
		if d.pos >= len(d.s) {
			d.fail("string end")
		}
		c := d.s[d.pos]
		switch {
		case c == '"':
			d.pos++
			return b.String()
		case c == '\\':
			if d.pos+1 >= len(d.s) {
				d.fail("escape")
			}
			e := d.s[d.pos+1]
			d.pos += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r := d.hex4()
				if r >= 0xd800 && r < 0xdc00 && strings.HasPrefix(d.s[d.pos:], `\u`) {
					d.pos += 2
					lo := d.hex4()
					r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
				}
				b.WriteRune(rune(r))
			default:
				d.fail("valid escape")
			}
		default:
			b.WriteByte(c)
			d.pos++
		}
	}
}

func (d *cjsonDecoder) hex4() int {
	if d.pos+4 > len(d.s) {
		d.fail("unicode escape")
	}
	n, err := strconv.ParseUint(d.s[d.pos:d.pos+4], 16, 32)
	if err != nil {
		d.fail("unicode escape")
	}
	d.pos += 4
	return int(n)
}
