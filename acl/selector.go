package acl

import (
	"errors"

	"slices"
	"strings"

	"github.com/shoal-db/shoal/glob"

	"github.com/shoal-db/shoal/command"
)

// Perm is a key pattern's access: read, write or both (%R~, %W~, ~).
type Perm uint8

const (
	PermRead Perm = 1 << iota
	PermWrite
	PermAll = PermRead | PermWrite
)

// KeyPattern is one key pattern of a selector.
type KeyPattern struct {
	Pattern string
	Perm    Perm
	match   patternKind // how Pattern is matched (classify)
}

// patternKind is how a glob pattern can be matched: most ACL patterns are
// a literal or a literal prefix followed by one '*' ("app:*"), which need
// no glob walk on the command path.
type patternKind uint8

const (
	matchGlob   patternKind = iota
	matchExact              // no special character: the key equals the pattern
	matchPrefix             // "<literal>*": the key starts with the literal (and is not empty)
)

func classify(p string) patternKind {
	body := p
	kind := matchExact
	if strings.HasSuffix(p, "*") {
		body, kind = p[:len(p)-1], matchPrefix
	}
	if strings.ContainsAny(body, "*?[\\") {
		return matchGlob
	}
	return kind
}

// matches is glob.Match(k.Pattern, key, false), short-cut for literals and
// prefixes (Redis's stringmatchlen: "*" does not match an empty key).
func (k *KeyPattern) matches(key string) bool {
	switch k.match {
	case matchExact:
		return key == k.Pattern
	case matchPrefix:
		return len(key) > 0 && strings.HasPrefix(key, k.Pattern[:len(k.Pattern)-1])
	}
	return glob.Match(k.Pattern, key, false)
}

func (k KeyPattern) String() string {
	switch k.Perm {
	case PermRead:
		return "%R~" + k.Pattern
	case PermWrite:
		return "%W~" + k.Pattern
	}
	return "~" + k.Pattern
}

// Selector is one set of permissions: the root selector of a user, or one
// of its "(...)" selectors. A command is allowed when one selector allows
// the command, its keys and its channels together.
type Selector struct {
	allKeys, allChannels bool
	// allCommands is Redis's SELECTOR_FLAG_ALLCOMMANDS: set by +@all,
	// cleared when any command is taken away; future is its reserved bit
	// (the rules started from +@all), cleared only by -@all.
	allCommands, future bool
	allowed             []uint64         // one bit per command ID
	firstArgs           map[int][]string // +cmd|arg of commands allowed only with that first argument
	keys                []KeyPattern
	channels            []string
	keysAllPerm         bool // every key pattern grants read and write: key flags do not matter
}

func newSelector(t *Commands, allChannels bool) *Selector {
	return &Selector{allowed: make([]uint64, (t.ids+63)/64), allChannels: allChannels, keysAllPerm: true}
}

func (s *Selector) clone() *Selector {
	c := *s
	c.allowed = slices.Clone(s.allowed)
	c.keys = slices.Clone(s.keys)
	c.channels = slices.Clone(s.channels)
	if s.firstArgs != nil {
		c.firstArgs = make(map[int][]string, len(s.firstArgs))
		for id, a := range s.firstArgs {
			c.firstArgs[id] = slices.Clone(a)
		}
	}
	return &c
}

// bit reports whether the command numbered id is allowed; an id beyond
// the table the selector was made for (a command without a handler) never
// is.
func (s *Selector) bit(id int) bool {
	return id/64 < len(s.allowed) && s.allowed[id/64]&(1<<(id%64)) != 0
}

func (s *Selector) setBit(id int, on bool) {
	if id/64 >= len(s.allowed) {
		return
	}
	if on {
		s.allowed[id/64] |= 1 << (id % 64)
	} else {
		s.allowed[id/64] &^= 1 << (id % 64)
		s.allCommands = false
	}
}

// changePerm allows or denies a command; a container's subcommands follow
// it (ACLChangeSelectorPerm).
func (s *Selector) changePerm(t *Commands, spec *command.Spec, allow bool) {
	s.setBit(spec.ID, allow)
	delete(s.firstArgs, spec.ID)
	for _, sub := range t.subs[spec.ID] {
		s.setBit(sub.ID, allow)
	}
}

func (s *Selector) setCategory(t *Commands, cat command.ACLCat, allow bool) {
	for _, spec := range t.all {
		if spec.ACL&cat != 0 {
			s.changePerm(t, spec, allow)
		}
	}
}

func (s *Selector) setAll(allow bool) {
	fill := uint64(0)
	if allow {
		fill = ^uint64(0)
	}
	for i := range s.allowed {
		s.allowed[i] = fill
	}
	s.allCommands, s.future = allow, allow
	s.firstArgs = nil
}

// Rule errors: ACLSetUserStringError's texts.
var (
	errSyntax         = errors.New("Syntax error")
	errUnknownCommand = errors.New("Unknown command or category name in ACL")
	errKeyAfterAll    = errors.New("Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns")
	errChanAfterAll   = errors.New("Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels")
	errNoSuchPassword = errors.New("The password you are trying to remove from the user does not exist")
	errBadHash        = errors.New("The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters")
	errDuplicateUser  = errors.New("Duplicate user found. A user can only be defined once in config files")
	errSubFirstArg    = errors.New("Allowing first-arg of a subcommand is not supported")
)

// apply applies one selector rule (ACLSetSelector).
func (s *Selector) apply(t *Commands, op string) error {
	switch {
	case equalFold(op, "allkeys") || op == "~*":
		s.allKeys, s.keys, s.keysAllPerm = true, nil, true
	case equalFold(op, "resetkeys"):
		s.allKeys, s.keys, s.keysAllPerm = false, nil, true
	case equalFold(op, "allchannels") || op == "&*":
		s.allChannels, s.channels = true, nil
	case equalFold(op, "resetchannels"):
		s.allChannels, s.channels = false, nil
	case equalFold(op, "allcommands") || equalFold(op, "+@all"):
		s.setAll(true)
	case equalFold(op, "nocommands") || equalFold(op, "-@all"):
		s.setAll(false)
	case op[0] == '~' || op[0] == '%':
		return s.addKeyPattern(op)
	case op[0] == '&':
		if s.allChannels {
			return errChanAfterAll
		}
		if hasSpaces(op[1:]) {
			return errSyntax
		}
		if !slices.Contains(s.channels, op[1:]) {
			s.channels = append(s.channels, op[1:])
		}
	case len(op) > 1 && op[1] == '@' && (op[0] == '+' || op[0] == '-'):
		cat := Category(op[2:])
		if cat == 0 {
			return errUnknownCommand
		}
		s.setCategory(t, cat, op[0] == '+')
	case op[0] == '+':
		return s.allow(t, op[1:])
	case op[0] == '-':
		spec := t.Lookup(op[1:])
		if spec == nil {
			return errUnknownCommand
		}
		s.changePerm(t, spec, false)
	default:
		return errSyntax
	}
	return nil
}

// addKeyPattern adds ~pattern, %R~pattern, %W~pattern or %RW~pattern.
func (s *Selector) addKeyPattern(op string) error {
	if s.allKeys {
		return errKeyAfterAll
	}
	perm, off := PermAll, 1
	if op[0] == '%' {
		perm = 0
		for ; off < len(op); off++ {
			c := op[off]
			if (c == 'R' || c == 'r') && perm&PermRead == 0 {
				perm |= PermRead
			} else if (c == 'W' || c == 'w') && perm&PermWrite == 0 {
				perm |= PermWrite
			} else if c == '~' {
				off++
				break
			} else {
				return errSyntax
			}
		}
		if perm == 0 {
			return errSyntax // "%~x" grants nothing; Redis 7.0.15 aborts describing it
		}
	}
	pat := op[off:]
	if hasSpaces(pat) {
		return errSyntax
	}
	i := slices.IndexFunc(s.keys, func(k KeyPattern) bool { return k.Pattern == pat })
	if i < 0 {
		s.keys = append(s.keys, KeyPattern{Pattern: pat, Perm: perm, match: classify(pat)})
	} else {
		s.keys[i].Perm |= perm
	}
	s.allKeys = false
	s.keysAllPerm = !slices.ContainsFunc(s.keys, func(k KeyPattern) bool { return k.Perm != PermAll })
	return nil
}

// allow applies +command, +container|sub and +command|first-arg.
func (s *Selector) allow(t *Commands, name string) error {
	cut := strings.LastIndexByte(name, '|')
	if cut < 0 {
		spec := t.Lookup(name)
		if spec == nil {
			return errUnknownCommand
		}
		s.changePerm(t, spec, true)
		return nil
	}
	base, arg := name[:cut], name[cut+1:]
	spec := t.Lookup(base)
	switch {
	case spec == nil:
		return errUnknownCommand
	case spec.Parent != nil:
		return errSubFirstArg
	case arg == "":
		return errSyntax
	}
	if len(spec.Subcommands) > 0 {
		sub := t.Lookup(name)
		if sub == nil {
			return errUnknownCommand
		}
		s.changePerm(t, sub, true)
		return nil
	}
	// A first argument of a command without subcommands (SELECT|0): a
	// deprecated form Redis still accepts.
	if s.firstArgs == nil {
		s.firstArgs = make(map[int][]string)
	}
	if !slices.ContainsFunc(s.firstArgs[spec.ID], func(a string) bool { return equalFold(a, arg) }) {
		s.firstArgs[spec.ID] = append(s.firstArgs[spec.ID], arg)
	}
	return nil
}

// hasSpaces is ACLStringHasSpaces: C's isspace or a NUL byte.
func hasSpaces(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

// countCategory counts the commands of a category the selector allows (on)
// and does not (off).
func (s *Selector) countCategory(t *Commands, cat command.ACLCat) (on, off int) {
	for _, spec := range t.all {
		if spec.ACL&cat != 0 {
			if s.bit(spec.ID) {
				on++
			} else {
				off++
			}
		}
	}
	return on, off
}

// describeCommands is ACLDescribeSelectorCommandRules: +@all or -@all, the
// categories that fit best, then single commands until the rules rebuild
// exactly the selector's command bits.
func (s *Selector) describeCommands(t *Commands) string {
	var b strings.Builder
	additive := !s.future
	fake := newSelector(t, false)
	if additive {
		b.WriteString("-@all ")
	} else {
		b.WriteString("+@all ")
		fake.setAll(true)
	}
	temp := &Selector{allowed: slices.Clone(s.allowed)}
	applied := make([]bool, len(command.ACLCatNames))
	for {
		best, minDiff, maxSame := -1, int(^uint(0)>>1), 0
		for j, c := range command.ACLCatNames {
			if applied[j] {
				continue
			}
			on, off := temp.countCategory(t, c.Cat)
			diff, same := on, off
			if additive {
				diff, same = off, on
			}
			if same > diff && (diff < minDiff || (diff == minDiff && same > maxSame)) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		c := command.ACLCatNames[best]
		fake.setCategory(t, c.Cat, additive)
		temp.setCategory(t, c.Cat, !additive)
		if additive {
			b.WriteString("+@")
		} else {
			b.WriteString("-@")
		}
		b.WriteString(c.Name)
		b.WriteByte(' ')
		applied[best] = true
	}
	for _, spec := range t.all {
		mine := s.bit(spec.ID)
		if mine != fake.bit(spec.ID) {
			if mine {
				b.WriteByte('+')
			} else {
				b.WriteByte('-')
			}
			b.WriteString(spec.FullName())
			b.WriteByte(' ')
			fake.changePerm(t, spec, mine)
		}
		if !mine {
			for _, a := range s.firstArgs[spec.ID] {
				b.WriteString("+" + spec.FullName() + "|" + a + " ")
			}
		}
	}
	return strings.TrimSuffix(b.String(), " ")
}

// keysText is GETUSER's "keys" field.
func (s *Selector) keysText() string {
	if s.allKeys {
		return "~*"
	}
	parts := make([]string, len(s.keys))
	for i, k := range s.keys {
		parts[i] = k.String()
	}
	return strings.Join(parts, " ")
}

// channelsText is GETUSER's "channels" field.
func (s *Selector) channelsText() string {
	if s.allChannels {
		return "&*"
	}
	parts := make([]string, len(s.channels))
	for i, c := range s.channels {
		parts[i] = "&" + c
	}
	return strings.Join(parts, " ")
}

// describe is ACLDescribeSelector: keys, channels and command rules in
// ACL SETUSER's language.
func (s *Selector) describe(t *Commands) string {
	var b strings.Builder
	if s.allKeys {
		b.WriteString("~* ")
	} else {
		for _, k := range s.keys {
			b.WriteString(k.String())
			b.WriteByte(' ')
		}
	}
	if s.allChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range s.channels {
			b.WriteString("&" + c + " ")
		}
	}
	b.WriteString(s.describeCommands(t))
	return b.String()
}
