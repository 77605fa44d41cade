package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"slices"
	"strings"
	"sync/atomic"
)

// User is a named user. Its rules are an immutable UserState swapped as a
// whole by ACL SETUSER, so connections read them without locks.
type User struct {
	name    string
	state   atomic.Pointer[UserState]
	deleted atomic.Bool
}

// Name returns the user's name.
func (u *User) Name() string { return u.name }

// State returns the user's current rules.
func (u *User) State() *UserState { return u.state.Load() }

// Deleted reports whether ACL DELUSER or ACL LOAD removed the user.
func (u *User) Deleted() bool { return u.deleted.Load() }

// UserState is a user's rules at one moment. It is never changed once
// published.
type UserState struct {
	enabled       bool // on (else off)
	nopass        bool
	sanitizeSet   bool // sanitize-payload or skip-sanitize-payload was given
	skipSanitize  bool
	passwords     []string    // lower-case hex SHA-256 of each password
	selectors     []*Selector // the root selector first
	allowsAll     bool        // some selector allows every command, key and channel
	cachedDescrib string
}

// AllowsAll reports whether the user may run anything: the dispatcher's
// one test for the default user.
func (st *UserState) AllowsAll() bool { return st.allowsAll }

// Enabled reports whether the user is on.
func (st *UserState) Enabled() bool { return st.enabled }

// NoPass reports whether any password authenticates the user.
func (st *UserState) NoPass() bool { return st.nopass }

func newUserState(t *Commands, allChannels bool) *UserState {
	return &UserState{selectors: []*Selector{newSelector(t, allChannels)}}
}

func (st *UserState) clone() *UserState {
	c := &UserState{enabled: st.enabled, nopass: st.nopass, sanitizeSet: st.sanitizeSet,
		skipSanitize: st.skipSanitize, passwords: slices.Clone(st.passwords)}
	for _, s := range st.selectors {
		c.selectors = append(c.selectors, s.clone())
	}
	return c
}

// finish computes the derived fields once the rules are applied.
func (st *UserState) finish(t *Commands) {
	st.allowsAll = false
	for _, s := range st.selectors {
		if s.allCommands && s.allKeys && s.allChannels {
			st.allowsAll = true
		}
	}
	st.cachedDescrib = st.describe(t)
}

// HashPassword is the form passwords are kept and shown in: lower-case hex
// SHA-256.
func HashPassword(p string) string {
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:])
}

func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; (c < 'a' || c > 'f') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// apply applies one rule of ACL SETUSER's language (ACLSetUser).
func (st *UserState) apply(t *Commands, op string, pubsubAll bool) error {
	if op == "" {
		return nil
	}
	switch {
	case equalFold(op, "on"):
		st.enabled = true
	case equalFold(op, "off"):
		st.enabled = false
	case equalFold(op, "skip-sanitize-payload"):
		st.sanitizeSet, st.skipSanitize = true, true
	case equalFold(op, "sanitize-payload"):
		st.sanitizeSet, st.skipSanitize = true, false
	case equalFold(op, "nopass"):
		st.nopass, st.passwords = true, nil
	case equalFold(op, "resetpass"):
		st.nopass, st.passwords = false, nil
	case op[0] == '>' || op[0] == '#':
		h := op[1:]
		if op[0] == '>' {
			h = HashPassword(op[1:])
		} else if !validHash(h) {
			return errBadHash
		}
		if !slices.Contains(st.passwords, h) {
			st.passwords = append(st.passwords, h)
		}
		st.nopass = false
	case op[0] == '<' || op[0] == '!':
		h := op[1:]
		if op[0] == '<' {
			h = HashPassword(op[1:])
		} else if !validHash(h) {
			return errBadHash
		}
		i := slices.Index(st.passwords, h)
		if i < 0 {
			return errNoSuchPassword
		}
		st.passwords = slices.Delete(st.passwords, i, i+1)
	case op[0] == '(' && op[len(op)-1] == ')':
		s := newSelector(t, pubsubAll)
		for _, o := range strings.Fields(op[1 : len(op)-1]) {
			if err := s.apply(t, o); err != nil {
				return err
			}
		}
		st.selectors = append(st.selectors, s)
	case equalFold(op, "clearselectors"):
		st.selectors = st.selectors[:1]
	case equalFold(op, "reset"):
		st.nopass, st.passwords = false, nil
		root := st.selectors[0]
		root.allKeys, root.keys, root.keysAllPerm = false, nil, true
		root.allChannels, root.channels = pubsubAll, nil
		st.enabled = false
		st.sanitizeSet, st.skipSanitize = true, false
		st.selectors = st.selectors[:1]
		root.setAll(false)
	default:
		return st.selectors[0].apply(t, op)
	}
	return nil
}

// describe is ACLDescribeUser: flags, password hashes, then the root
// selector and the others in parentheses.
func (st *UserState) describe(t *Commands) string {
	var b strings.Builder
	for _, f := range st.flagNames() {
		b.WriteString(f)
		b.WriteByte(' ')
	}
	for _, p := range st.passwords {
		b.WriteString("#" + p + " ")
	}
	for i, s := range st.selectors {
		if i == 0 {
			b.WriteString(s.describe(t))
		} else {
			b.WriteString(" (" + s.describe(t) + ")")
		}
	}
	return b.String()
}

// flagNames are the user's flags in Redis's order.
func (st *UserState) flagNames() []string {
	f := make([]string, 0, 3)
	if st.enabled {
		f = append(f, "on")
	} else {
		f = append(f, "off")
	}
	if st.nopass {
		f = append(f, "nopass")
	}
	if st.sanitizeSet {
		if st.skipSanitize {
			f = append(f, "skip-sanitize-payload")
		} else {
			f = append(f, "sanitize-payload")
		}
	}
	return f
}

// checkPassword reports whether pass authenticates the user.
func (st *UserState) checkPassword(pass []byte) bool {
	if !st.enabled {
		return false
	}
	if st.nopass {
		return true
	}
	sum := sha256.Sum256(pass)
	var hx [64]byte
	hex.Encode(hx[:], sum[:])
	ok := false
	for _, p := range st.passwords {
		if subtle.ConstantTimeCompare(hx[:], []byte(p)) == 1 {
			ok = true
		}
	}
	return ok
}

// Description is the user's rules in ACL SETUSER's language (ACL LIST).
func (st *UserState) Description() string { return st.cachedDescrib }

// Flags returns the user's flags in Redis's order (GETUSER "flags").
func (st *UserState) Flags() []string { return st.flagNames() }

// Passwords returns the password hashes (GETUSER "passwords").
func (st *UserState) Passwords() []string { return slices.Clone(st.passwords) }

// SelectorView is what GETUSER shows of a selector.
type SelectorView struct {
	Commands, Keys, Channels string
}

// Selectors returns GETUSER's views of the root selector and the others.
func (st *UserState) Selectors(t *Commands) []SelectorView {
	out := make([]SelectorView, len(st.selectors))
	for i, s := range st.selectors {
		out[i] = SelectorView{Commands: s.describeCommands(t), Keys: s.keysText(), Channels: s.channelsText()}
	}
	return out
}
