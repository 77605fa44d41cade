package config

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/shoal-db/shoal/strconvx"
)

// Type is the value type of a directive.
type Type int

const (
	// TypeBool is a yes/no directive.
	TypeBool Type = iota
	// TypeInt is an integer directive (possibly accepting memory units,
	// percentages or octal numbers, see Info.Memory/Percent/Octal).
	TypeInt
	// TypeEnum is a directive taking one of a fixed set of names (or several
	// of them, for multi-flag enums like shutdown-on-sigterm).
	TypeEnum
	// TypeString is a free-form string directive.
	TypeString
	// TypeSpecial is a directive with its own syntax: save, bind, dir,
	// client-output-buffer-limit, oom-score-adj-values,
	// notify-keyspace-events, replicaof, latency-tracking-info-percentiles.
	TypeSpecial
)

func (t Type) String() string {
	switch t {
	case TypeBool:
		return "bool"
	case TypeInt:
		return "int"
	case TypeEnum:
		return "enum"
	case TypeString:
		return "string"
	case TypeSpecial:
		return "special"
	}
	return "unknown"
}

// Flag describes how a directive may be used, mirroring Redis's config flags.
type Flag uint32

const (
	// FlagImmutable directives can only be set at startup (IMMUTABLE_CONFIG).
	FlagImmutable Flag = 1 << iota
	// FlagSensitive directives hold secrets: CONFIG SET arguments must be
	// redacted from logs, SLOWLOG, MONITOR (SENSITIVE_CONFIG).
	FlagSensitive
	// FlagProtected directives can only be changed at runtime when
	// enable-protected-configs allows it (PROTECTED_CONFIG).
	FlagProtected
	// FlagHidden directives are only returned by CONFIG GET when named
	// exactly, never by a pattern (HIDDEN_CONFIG).
	FlagHidden
	// FlagMultiArg directives take several arguments (MULTI_ARG_CONFIG).
	FlagMultiArg
	// FlagDenyLoading directives can't be set while loading (DENY_LOADING_CONFIG).
	FlagDenyLoading
	// FlagVolatile directives run their change hooks even when the new
	// value equals the old one, e.g. certificate file names (VOLATILE_CONFIG).
	FlagVolatile
	// FlagDebug directives are reported in debug information (DEBUG_CONFIG).
	FlagDebug
)

// numeric flags
const (
	numMemory = 1 << iota
	numPercent
	numOctal
)

type enumItem struct {
	name string
	val  int64
}

// value is an immutable snapshot of a directive's value.
type value struct {
	num  int64  // bool (0/1), integer, enum value, notify flags
	str  string // canonical text as printed by CONFIG GET
	data any    // typed data of special directives
}

type setCtx struct {
	fromFile bool
	ld       *loader // non-nil while reading a configuration file
}

type specialOps struct {
	set     func(c *Config, d *directive, args []string, ctx setCtx) (*value, string)
	rewrite func(c *Config, d *directive, st *rewriteState)
	strings func(v *value) []string
}

// directive is one configuration directive of one Config instance.
type directive struct {
	name  string
	alias string
	typ   Type
	flags Flag

	// numeric
	numFlags int
	unsigned bool // bounds are compared as unsigned (size_t, unsigned int, ...)
	lower    int64
	upper    int64
	clamp    func(int64) int64

	// enum
	enum []enumItem

	// string
	emptyIsNull bool
	defNull     bool // the default is NULL (printed as "")

	validInt func(int64) string
	validStr func(c *Config, v string) string

	special *specialOps

	def *value // default value
	cur atomic.Pointer[value]
}

func (d *directive) has(f Flag) bool { return d.flags&f != 0 }

// entry is a name under which a directive is registered: its primary name or
// its alias. Like Redis, aliases are distinct entries (CONFIG GET * lists
// both, and CONFIG SET x 1 alias-of-x 2 is not a duplicate).
type entry struct {
	name  string
	alias bool
	d     *directive
}

func (d *directive) load() *value { return d.cur.Load() }

// parse validates args and builds the new value. args has exactly one
// element for directives that are not multi-arg.
func (d *directive) parse(c *Config, args []string, ctx setCtx) (*value, string) {
	switch d.typ {
	case TypeBool:
		var yn int64
		switch strings.ToLower(args[0]) {
		case "yes":
			yn = 1
		case "no":
			yn = 0
		default:
			return nil, "argument must be 'yes' or 'no'"
		}
		if d.validInt != nil {
			if e := d.validInt(yn); e != "" {
				return nil, e
			}
		}
		return boolValue(yn != 0), ""
	case TypeInt:
		n, e := d.parseNumber(args[0])
		if e != "" {
			return nil, e
		}
		if e := d.checkBounds(n); e != "" {
			return nil, e
		}
		if d.validInt != nil {
			if e := d.validInt(n); e != "" {
				return nil, e
			}
		}
		if d.clamp != nil {
			n = d.clamp(n)
		}
		return d.numValue(n), ""
	case TypeEnum:
		n, ok := enumParse(d.enum, args, d.has(FlagMultiArg))
		if !ok {
			names := make([]string, len(d.enum))
			for i, it := range d.enum {
				names[i] = it.name
			}
			return nil, "argument(s) must be one of the following: " + strings.Join(names, ", ")
		}
		if d.validInt != nil {
			if e := d.validInt(n); e != "" {
				return nil, e
			}
		}
		return d.enumValue(n), ""
	case TypeString:
		if d.validStr != nil {
			if e := d.validStr(c, args[0]); e != "" {
				return nil, e
			}
		}
		return &value{str: args[0]}, ""
	default:
		return d.special.set(c, d, args, ctx)
	}
}

func boolValue(b bool) *value {
	if b {
		return &value{num: 1, str: "yes"}
	}
	return &value{num: 0, str: "no"}
}

func (d *directive) numValue(n int64) *value {
	return &value{num: n, str: d.formatNumber(n)}
}

func (d *directive) enumValue(n int64) *value {
	return &value{num: n, str: enumName(d.enum, n, d.has(FlagMultiArg))}
}

// parseNumber mirrors numericParseString().
func (d *directive) parseNumber(s string) (int64, string) {
	if d.numFlags&numMemory != 0 {
		if v, ok := memtoull(s); ok {
			return int64(v), ""
		}
	}
	if d.numFlags&numPercent != 0 && len(s) > 1 && s[len(s)-1] == '%' {
		if v, ok := strconvx.ParseInt(s[:len(s)-1]); ok && v >= 0 {
			return -v, ""
		}
	}
	if d.numFlags&numOctal != 0 {
		if v, end, erange := cStrtoll(s, 8); !erange && end == len(s) {
			return v, ""
		}
	}
	if d.numFlags == 0 {
		if v, ok := strconvx.ParseInt(s); ok {
			return v, ""
		}
	}
	switch {
	case d.numFlags&numMemory != 0 && d.numFlags&numPercent != 0:
		return 0, "argument must be a memory or percent value"
	case d.numFlags&numMemory != 0:
		return 0, "argument must be a memory value"
	case d.numFlags&numOctal != 0:
		return 0, "argument couldn't be parsed as an octal number"
	default:
		return 0, "argument couldn't be parsed into an integer"
	}
}

// checkBounds mirrors numericBoundaryCheck().
func (d *directive) checkBounds(n int64) string {
	if d.unsigned {
		u, lo, hi := uint64(n), uint64(d.lower), uint64(d.upper)
		if u > hi || u < lo {
			if d.numFlags&numOctal != 0 {
				return "argument must be between " + strconv.FormatUint(lo, 8) + " and " +
					strconv.FormatUint(hi, 8) + " inclusive"
			}
			return "argument must be between " + strconv.FormatUint(lo, 10) + " and " +
				strconv.FormatUint(hi, 10) + " inclusive"
		}
		return ""
	}
	if d.numFlags&numPercent != 0 && n < 0 {
		if n < d.lower {
			return "percentage argument must be less or equal to " + strconv.FormatInt(-d.lower, 10)
		}
		return ""
	}
	if n > d.upper || n < d.lower {
		return "argument must be between " + strconv.FormatInt(d.lower, 10) + " and " +
			strconv.FormatInt(d.upper, 10) + " inclusive"
	}
	return ""
}

// formatNumber mirrors numericConfigGet().
func (d *directive) formatNumber(n int64) string {
	switch {
	case d.numFlags&numPercent != 0 && n < 0:
		return strconv.FormatInt(-n, 10) + "%"
	case d.numFlags&numMemory != 0:
		return strconv.FormatUint(uint64(n), 10)
	case d.numFlags&numOctal != 0:
		return strconv.FormatUint(uint64(n), 8)
	case d.unsigned:
		return strconv.FormatUint(uint64(n), 10)
	default:
		return strconv.FormatInt(n, 10)
	}
}

// enumParse mirrors configEnumGetValue().
func enumParse(items []enumItem, args []string, bitflags bool) (int64, bool) {
	if len(args) == 0 || (!bitflags && len(args) != 1) {
		return 0, false
	}
	var v int64
	for _, a := range args {
		matched := false
		for _, it := range items {
			if strings.EqualFold(a, it.name) {
				v |= it.val
				matched = true
			}
		}
		if !matched {
			return 0, false
		}
	}
	return v, true
}

// enumName mirrors configEnumGetName().
func enumName(items []enumItem, v int64, bitflags bool) string {
	var names []string
	unmatched := v
	for _, it := range items {
		if v == it.val {
			return it.name
		}
		if bitflags && it.val != 0 && it.val == unmatched&it.val {
			names = append(names, it.name)
			unmatched &^= it.val
		}
	}
	if len(names) == 0 || unmatched != 0 {
		return "unknown"
	}
	return strings.Join(names, " ")
}

// stringsOf returns the value as a list of words (see Config.Strings).
func (d *directive) stringsOf(v *value) []string {
	if d.special != nil && d.special.strings != nil {
		return d.special.strings(v)
	}
	if d.has(FlagMultiArg) {
		return strings.Fields(v.str)
	}
	if v.str == "" && d.typ == TypeString {
		return []string{}
	}
	return []string{v.str}
}
