// Package acl is Redis 7.0's access control lists: users, their rules
// (ACL SETUSER's language), selectors, and the permission checks the
// dispatcher runs for every command, key and channel. It owns the users
// and the ACL log; the server glue (connections, AUTH, the ACL command's
// replies, configuration hooks) lives in node.
//
// A user's rules are an immutable UserState behind an atomic pointer: a
// connection reads its user's state with one load per command, and a user
// with every permission (the default user, unless restricted) is one flag
// test (UserState.AllowsAll).
package acl

import (
	"sort"

	"github.com/shoal-db/shoal/command"
)

// Commands is the command table the rules refer to: every command and
// subcommand by its original name (renaming a command does not change its
// ACL name, as in Redis), numbered by command.Spec.ID.
type Commands struct {
	all    []*command.Spec          // every command, a container followed by its subcommands
	subs   map[int][]*command.Spec  // a container's implemented subcommands, by its ID
	byName map[string]*command.Spec // lower-case "name" and "container|sub"
	ids    int                      // 1 + the largest Spec.ID
}

// NewCommands indexes the given top-level commands and their subcommands.
// Subcommands without a handler are left out, as unknown commands.
func NewCommands(top []*command.Spec) *Commands {
	t := &Commands{byName: make(map[string]*command.Spec), subs: make(map[int][]*command.Spec)}
	for _, spec := range top {
		t.add(spec)
		if len(spec.Subcommands) == 0 {
			continue
		}
		subs := make([]*command.Spec, 0, len(spec.Subcommands))
		for _, sub := range spec.Subcommands {
			if sub.Handler != nil {
				subs = append(subs, sub)
			}
		}
		sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
		t.subs[spec.ID] = subs
		for _, sub := range subs {
			t.add(sub)
		}
	}
	return t
}

func (t *Commands) add(spec *command.Spec) {
	t.all = append(t.all, spec)
	t.byName[spec.FullName()] = spec
	if spec.ID+1 > t.ids {
		t.ids = spec.ID + 1
	}
}

// Lookup finds "name" or "container|sub", in any case (Redis's
// lookupCommandBySds on the original table).
func (t *Commands) Lookup(name string) *command.Spec {
	return t.byName[lowerASCII(name)]
}

// Category returns the category bit of a name, in any case, or 0.
func Category(name string) command.ACLCat {
	for _, c := range command.ACLCatNames {
		if equalFold(c.Name, name) {
			return c.Cat
		}
	}
	return 0
}

// InCategory returns the full names of the commands of a category (ACL CAT).
func (t *Commands) InCategory(cat command.ACLCat) []string {
	var out []string
	for _, spec := range t.all {
		if spec.ACL&cat != 0 {
			out = append(out, spec.FullName())
		}
	}
	return out
}

// equalFold is strcasecmp's equality: ASCII letters only (strings.EqualFold
// would also fold non-ASCII letters, such as the Kelvin sign to "k").
func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lowerByte(a[i]) != lowerByte(b[i]) {
			return false
		}
	}
	return true
}

func lowerByte(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// lowerASCII lowers ASCII letters only, as Redis's case-insensitive
// command dictionary compares names.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				b[j] = lowerByte(b[j])
			}
			return string(b)
		}
	}
	return s
}
