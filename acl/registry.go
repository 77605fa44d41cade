package acl

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultUserName is the user every connection starts as.
const DefaultUserName = "default"

// Registry holds the users (Redis's Users radix tree) and the ACL log.
type Registry struct {
	cmds      *Commands
	pubsubAll atomic.Bool // acl-pubsub-default allchannels

	mu    sync.Mutex // guards users; serialises changes
	users map[string]*User
	def   *User

	Log Log
}

// NewRegistry makes the registry with the default user: on, nopass, every
// key, channel and command.
func NewRegistry(cmds *Commands) *Registry {
	r := &Registry{cmds: cmds, users: make(map[string]*User)}
	r.def = r.create(DefaultUserName)
	r.def.state.Store(r.defaultState())
	r.Log.maxLen.Store(128)
	return r
}

func (r *Registry) defaultState() *UserState {
	st := newUserState(r.cmds, r.pubsubAll.Load())
	for _, op := range []string{"+@all", "~*", "&*", "on", "nopass"} {
		_ = st.apply(r.cmds, op, false)
	}
	st.finish(r.cmds)
	return st
}

func (r *Registry) create(name string) *User {
	u := &User{name: name}
	st := newUserState(r.cmds, r.pubsubAll.Load())
	st.finish(r.cmds)
	u.state.Store(st)
	r.users[name] = u
	return u
}

// Commands returns the command table the rules refer to.
func (r *Registry) Commands() *Commands { return r.cmds }

// Default returns the default user.
func (r *Registry) Default() *User { return r.def }

// SetPubsubDefault sets acl-pubsub-default: whether new users and
// selectors start with every channel (allchannels) or none.
func (r *Registry) SetPubsubDefault(all bool) { r.pubsubAll.Store(all) }

// Get returns the user of that name, or nil.
func (r *Registry) Get(name string) *User {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.users[name]
}

// Users returns every user in name order (bytewise, as Redis's radix tree).
func (r *Registry) Users() []*User {
	r.mu.Lock()
	out := make([]*User, 0, len(r.users))
	for _, u := range r.users {
		out = append(out, u)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Authenticate returns the user that name and pass authenticate, or nil
// (ACLCheckUserCredentials).
func (r *Registry) Authenticate(name, pass []byte) *User {
	u := r.Get(string(name))
	if u == nil || !u.State().checkPassword(pass) {
		return nil
	}
	return u
}

// mergeSelectors is ACLMergeSelectorArguments: a selector spread over
// several arguments ("(~a" "+get)") becomes one. It returns the index of an
// unclosed selector's first argument when one is left open.
func mergeSelectors(args []string) ([]string, int) {
	out := make([]string, 0, len(args))
	open := -1
	var sel string
	for j, op := range args {
		if open < 0 && len(op) > 0 && op[0] == '(' && op[len(op)-1] != ')' {
			sel, open = op, j
			continue
		}
		if open >= 0 {
			sel += " " + op
			if len(op) > 0 && op[len(op)-1] == ')' {
				out = append(out, sel)
				open = -1
			}
			continue
		}
		out = append(out, op)
	}
	if open >= 0 {
		return nil, open
	}
	return out, -1
}

// Change is what ACL SETUSER did to an existing user, for the connection
// glue: when Revoked is not nil, the user's subscribers whose
// subscriptions it reports must be closed.
type Change struct {
	User    *User
	Revoked func(ch string, pattern bool) bool
}

// SetUser creates or changes a user with ACL SETUSER's rules, all or
// nothing (ACLStringSetUser). The error is Redis's reply text without the
// "ERR " prefix.
func (r *Registry) SetUser(name string, ops []string) (Change, error) {
	if hasSpaces(name) {
		return Change{}, errors.New("Usernames can't contain spaces or null characters")
	}
	merged, bad := mergeSelectors(ops)
	if bad >= 0 {
		return Change{}, fmt.Errorf("Unmatched parenthesis in acl selector starting at '%s'.", ops[bad])
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.users[name]
	var st *UserState
	if u != nil {
		st = u.State().clone()
	} else {
		st = newUserState(r.cmds, r.pubsubAll.Load())
	}
	pubsubAll := r.pubsubAll.Load()
	for _, op := range merged {
		if err := st.apply(r.cmds, op, pubsubAll); err != nil {
			return Change{}, fmt.Errorf("Error in ACL SETUSER modifier '%s': %s", op, err)
		}
	}
	st.finish(r.cmds)
	ch := Change{}
	if u == nil {
		u = r.create(name)
	} else {
		ch.Revoked = st.SubscriptionsRevoked(u.State())
	}
	u.state.Store(st)
	ch.User = u
	return ch, nil
}

// retire marks a removed user: its connections, closed by the caller,
// may still be running commands of a read batch; from now on they may run
// nothing (Redis moves them to the unauthenticated default user at once).
func (r *Registry) retire(u *User) {
	st := newUserState(r.cmds, false)
	st.finish(r.cmds)
	u.state.Store(st)
	u.deleted.Store(true)
}

// ErrDeleteDefault is ACL DELUSER's refusal to remove the default user.
var ErrDeleteDefault = errors.New("The 'default' user cannot be removed")

// DelUsers removes users (ACL DELUSER) and returns the removed ones, whose
// connections the caller closes.
func (r *Registry) DelUsers(names []string) ([]*User, error) {
	for _, n := range names {
		if n == DefaultUserName {
			return nil, ErrDeleteDefault
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []*User
	for _, n := range names {
		if u := r.users[n]; u != nil {
			delete(r.users, n)
			r.retire(u)
			gone = append(gone, u)
		}
	}
	return gone, nil
}

// SetDefaultPassword is requirepass: the default user's only password, or
// nopass when empty (ACLUpdateDefaultUserPassword).
func (r *Registry) SetDefaultPassword(pass string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.def.State().clone()
	_ = st.apply(r.cmds, "resetpass", false)
	if pass != "" {
		_ = st.apply(r.cmds, ">"+pass, false)
	} else {
		_ = st.apply(r.cmds, "nopass", false)
	}
	st.finish(r.cmds)
	r.def.state.Store(st)
}

// UserLineValidator checks the "user" lines of a configuration as Redis
// does while reading it (ACLAppendUserForLoading): a duplicate name and a
// malformed rule are errors; unknown commands are reported only when the
// users are loaded. It returns the argument Redis names in its error.
func (r *Registry) UserLineValidator() func(args []string) (string, error) {
	seen := map[string]bool{}
	return func(args []string) (string, error) {
		// Redis indexes the line's words ("user", name, rules...) with
		// the failing rule's index among the merged rules; it names that
		// word.
		word := func(j int) string {
			if j == 0 {
				return "user"
			}
			if j-1 < len(args) {
				return args[j-1]
			}
			return ""
		}
		if seen[args[0]] {
			return args[0], errDuplicateUser
		}
		merged, bad := mergeSelectors(args[1:])
		if bad >= 0 {
			return word(bad), errSyntax
		}
		st := newUserState(r.cmds, r.pubsubAll.Load())
		for j, op := range merged {
			if err := st.apply(r.cmds, op, r.pubsubAll.Load()); err != nil && err != errUnknownCommand {
				return word(j), err
			}
		}
		seen[args[0]] = true
		return "", nil
	}
}

// ConfigUserValidator checks "user" configuration lines before any
// command table exists: unknown command names are only found when the
// users are loaded, as in Redis.
func ConfigUserValidator() func(args []string) (string, error) {
	return NewRegistry(NewCommands(nil)).UserLineValidator()
}

// LoadConfigUsers creates the users of the configuration's "user" lines at
// start-up (ACLLoadConfiguredUsers); "user default" resets the default user
// first. The error is the line Redis logs before exiting.
func (r *Registry) LoadConfigUsers(lines [][]string) (warnings []string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, line := range lines {
		name := line[0]
		if hasSpaces(name) {
			return warnings, errors.New("Spaces not allowed in ACL usernames")
		}
		merged, _ := mergeSelectors(line[1:])
		var st *UserState
		if name == DefaultUserName {
			st = r.def.State().clone()
			_ = st.apply(r.cmds, "reset", r.pubsubAll.Load())
		} else {
			st = newUserState(r.cmds, r.pubsubAll.Load())
		}
		for _, op := range merged {
			if e := st.apply(r.cmds, op, r.pubsubAll.Load()); e != nil {
				return warnings, fmt.Errorf("Error loading ACL rule '%s' for the user named '%s': %s", op, name, e)
			}
		}
		st.finish(r.cmds)
		u := r.users[name]
		if u == nil {
			u = r.create(name)
		}
		u.state.Store(st)
		if !st.enabled {
			warnings = append(warnings, "The user '"+name+"' is disabled (there is no 'on' modifier in the user description). Make sure this is not a configuration error.")
		}
	}
	return warnings, nil
}

// LoadFile replaces every user with the ACL file's (ACLLoadFromFile): all
// or nothing. It returns the users that were replaced (their connections
// are closed, except the default user's, which keeps its identity) or
// Redis's error text.
func (r *Registry) LoadFile(path, shownPath string) ([]*User, string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Sprintf("Error loading ACLs, opening file '%s': %s", shownPath, strerror(err))
	}
	var errs strings.Builder
	pubsubAll := r.pubsubAll.Load()
	states := map[string]*UserState{}
	var order []string
	for i, line := range strings.Split(string(data), "\n") {
		linenum := i + 1
		line = strings.Trim(line, " \t\r\n")
		if line == "" {
			continue
		}
		argv := splitSpaces(line)
		if len(argv) == 0 {
			continue
		}
		if argv[0] != "user" || len(argv) < 2 {
			fmt.Fprintf(&errs, "%s:%d should start with user keyword followed by the username. ", shownPath, linenum)
			continue
		}
		if hasSpaces(argv[1]) {
			fmt.Fprintf(&errs, "'%s:%d: username '%s' contains invalid characters. ", shownPath, linenum, argv[1])
			continue
		}
		if _, dup := states[argv[1]]; dup {
			fmt.Fprintf(&errs, "WARNING: Duplicate user '%s' found on line %d. ", argv[1], linenum)
			continue
		}
		st := newUserState(r.cmds, pubsubAll)
		states[argv[1]] = st
		order = append(order, argv[1])
		merged, bad := mergeSelectors(argv[2:])
		if bad >= 0 {
			fmt.Fprintf(&errs, "%s:%d: Unmatched parenthesis in selector definition.", shownPath, linenum)
		}
		syntaxErr := false
		for _, op := range merged {
			op = strings.Trim(op, "\t\r\n")
			if e := st.apply(r.cmds, op, pubsubAll); e != nil {
				if e == errUnknownCommand {
					fmt.Fprintf(&errs, "%s:%d: Error in applying operation '%s': %s. ", shownPath, linenum, op, e)
				} else if !syntaxErr {
					fmt.Fprintf(&errs, "%s:%d: %s. ", shownPath, linenum, e)
					syntaxErr = true
				}
			}
		}
	}
	if errs.Len() > 0 {
		return nil, errs.String() + "WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var replaced []*User
	for name, u := range r.users {
		if name != DefaultUserName {
			r.retire(u)
			replaced = append(replaced, u)
		}
	}
	r.users = map[string]*User{DefaultUserName: r.def}
	defState := r.defaultState()
	for _, name := range order {
		st := states[name]
		st.finish(r.cmds)
		if name == DefaultUserName {
			defState = st
			continue
		}
		u := &User{name: name}
		u.state.Store(st)
		r.users[name] = u
	}
	r.def.state.Store(defState)
	return replaced, ""
}

// splitSpaces is sdssplitlen on single spaces: empty fields between
// repeated spaces are kept.
func splitSpaces(line string) []string { return strings.Split(line, " ") }

// SaveFile writes every user to the ACL file (ACLSaveToFile): a temporary
// file renamed over it.
func (r *Registry) SaveFile(path string) error {
	var b strings.Builder
	for _, u := range r.Users() {
		b.WriteString("user " + u.name + " " + u.State().Description() + "\n")
	}
	tmp := path + ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixMilli(), 10)
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("Writing ACL file for ACL SAVE: %s", strerror(err))
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("Renaming ACL file for ACL SAVE: %s", strerror(err))
	}
	return nil
}

// ConfigLines returns every user as a "user" configuration line's
// arguments (CONFIG REWRITE without an ACL file).
func (r *Registry) ConfigLines() []string {
	var out []string
	for _, u := range r.Users() {
		out = append(out, u.name+" "+u.State().Description())
	}
	return out
}

// strerror is C's strerror text of a file error.
func strerror(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
