package str

import (
	"bytes"
	"math"

	"github.com/shoal-db/shoal/command"
)

// strOptFlags are the options of SET and GETEX (t_string.c's OBJ_* flags).
type strOptFlags uint16

const (
	optNX strOptFlags = 1 << iota
	optXX
	optEX
	optPX
	optKeepTTL
	optGet
	optEXAT
	optPXAT
	optPersist
)

// strOpts is the parsed option list of SET (forSet) or GETEX.
type strOpts struct {
	flags  strOptFlags
	expire []byte // the EX/PX/EXAT/PXAT argument, nil if none
}

// parse reads the options with Redis 7.0's exact acceptance rules
// (parseExtendedStringArgumentsOrReply): an option is accepted only if none
// of the options it conflicts with came before, so e.g. "NX XX", "EX 1 PX 1"
// and "KEEPTTL EX 1" are syntax errors while repeating "GET" or "EX" is not.
// It reports false on a syntax error.
func (o *strOpts) parse(args [][]byte, forSet bool) bool {
	const expires = optEX | optPX | optEXAT | optPXAT
	for i := 0; i < len(args); i++ {
		// Redis compares the argument as a C string: it ends at a NUL.
		a := args[i]
		if n := bytes.IndexByte(a, 0); n >= 0 {
			a = a[:n]
		}
		hasNext := i+1 < len(args)
		f := o.flags
		var set strOptFlags
		switch {
		case forSet && command.EqualFoldASCII(a, "nx") && f&optXX == 0:
			set = optNX
		case forSet && command.EqualFoldASCII(a, "xx") && f&optNX == 0:
			set = optXX
		case forSet && command.EqualFoldASCII(a, "get"):
			set = optGet
		case forSet && command.EqualFoldASCII(a, "keepttl") && f&(optPersist|expires) == 0:
			set = optKeepTTL
		case !forSet && command.EqualFoldASCII(a, "persist") && f&(expires|optKeepTTL) == 0:
			set = optPersist
		case command.EqualFoldASCII(a, "ex") && f&(optKeepTTL|optPersist|optEXAT|optPX|optPXAT) == 0 && hasNext:
			set = optEX
		case command.EqualFoldASCII(a, "px") && f&(optKeepTTL|optPersist|optEX|optEXAT|optPXAT) == 0 && hasNext:
			set = optPX
		case command.EqualFoldASCII(a, "exat") && f&(optKeepTTL|optPersist|optEX|optPX|optPXAT) == 0 && hasNext:
			set = optEXAT
		case command.EqualFoldASCII(a, "pxat") && f&(optKeepTTL|optPersist|optEX|optEXAT|optPX) == 0 && hasNext:
			set = optPXAT
		default:
			return false
		}
		o.flags |= set
		if set&expires != 0 {
			i++
			o.expire = args[i]
		}
	}
	return true
}

// expireAtOrReply converts the expire argument of o into an absolute unix-ms
// time as Redis's getExpireMillisecondsOrReply does: the value must be a
// positive integer, seconds must not overflow when scaled to milliseconds,
// and a relative time (EX/PX) is added to the keyspace clock, where a wrap
// past int64 is reported as an invalid expire time too. cmd is the command's
// full name for the error text. On error it replies and returns false.
func expireAtOrReply(c *command.Ctx, o strOpts, cmd string) (int64, bool) {
	ms, ok := command.ParseInt64(o.expire)
	if !ok {
		c.ErrNotInteger()
		return 0, false
	}
	seconds := o.flags&(optEX|optEXAT) != 0
	if ms <= 0 || seconds && ms > math.MaxInt64/1000 {
		errInvalidExpire(c, cmd)
		return 0, false
	}
	if seconds {
		ms *= 1000
	}
	if o.flags&(optEX|optPX) != 0 {
		ms += c.NowMs() // wraps negative on overflow, as in C
	}
	if ms <= 0 {
		errInvalidExpire(c, cmd)
		return 0, false
	}
	return ms, true
}

func errInvalidExpire(c *command.Ctx, cmd string) {
	c.Error("ERR invalid expire time in '" + cmd + "' command")
}
