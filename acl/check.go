package acl

import (
	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/glob"
)

// Result is the outcome of a permission check; the denials are ordered as
// Redis's ACL_DENIED_* so that the most relevant one is reported when no
// selector allows a command.
type Result uint8

const (
	OK Result = iota
	DeniedCmd
	DeniedKey
	DeniedAuth
	DeniedChannel
)

// KeySource gives a command's keys with their key-spec flags, computed
// only when a selector restricts keys; withFlags is false when the
// selector's patterns all grant read and write, so the flags do not matter.
type KeySource interface {
	ACLKeyRefs(withFlags bool) []command.KeyRef
}

// Check is ACLCheckAllUserCommandPerm: OK when one selector allows the
// command with its keys and channels; otherwise the most relevant denial
// and the position of the key or channel that caused it.
func (st *UserState) Check(spec *command.Spec, args [][]byte, keys KeySource) (Result, int) {
	if st.allowsAll {
		return OK, 0
	}
	worst, worstPos := DeniedCmd, 0
	for _, s := range st.selectors {
		r, pos := s.check(spec, args, keys)
		if r == OK {
			return OK, 0
		}
		if r > worst || (r == worst && pos > worstPos) {
			worst, worstPos = r, pos
		}
	}
	return worst, worstPos
}

func (s *Selector) check(spec *command.Spec, args [][]byte, keys KeySource) (Result, int) {
	if !s.allCommands && spec.Flags&command.FlagNoAuth == 0 && !s.bit(spec.ID) && !s.firstArgAllowed(spec, args) {
		return DeniedCmd, 0
	}
	if !s.allKeys && spec.HasKeyArguments() {
		for _, k := range keys.ACLKeyRefs(!s.keysAllPerm) {
			if !s.keyAllowed(command.Bstr(args[k.Pos]), k.Flags) {
				return DeniedKey, k.Pos
			}
		}
	}
	if !s.allChannels && spec.Flags&command.FlagPubsub != 0 {
		first, last, pattern := channelArgs(spec, len(args))
		for i := first; i <= last; i++ {
			if !channelAllowed(s.channels, command.Bstr(args[i]), pattern) {
				return DeniedChannel, i
			}
		}
	}
	return OK, 0
}

func (s *Selector) firstArgAllowed(spec *command.Spec, args [][]byte) bool {
	allowed := s.firstArgs[spec.ID]
	idx := 1
	if spec.Parent != nil {
		idx = 2
	}
	if len(allowed) == 0 || len(args) <= idx {
		return false
	}
	for _, a := range allowed {
		if equalFold(a, command.Bstr(args[idx])) {
			return true
		}
	}
	return false
}

// keyPerm is the access a key's spec flags need (ACLSelectorCheckKey).
func keyPerm(flags command.KeySpecFlag) Perm {
	var p Perm
	if flags&command.KeyAccess != 0 {
		p |= PermRead
	}
	if flags&(command.KeyInsert|command.KeyDelete|command.KeyUpdate) != 0 {
		p |= PermWrite
	}
	return p
}

func (s *Selector) keyAllowed(key string, flags command.KeySpecFlag) bool {
	need := keyPerm(flags)
	for i := range s.keys {
		if k := &s.keys[i]; k.Perm&need == need && k.matches(key) {
			return true
		}
	}
	return false
}

// channelArgs returns the positions of the channels a command subscribes
// or publishes to, and whether they are patterns (Redis's
// commands_with_channels; unsubscribing is never checked). last < first
// when there are none.
func channelArgs(spec *command.Spec, argc int) (first, last int, pattern bool) {
	switch spec.FullName() {
	case "subscribe", "ssubscribe":
		return 1, argc - 1, false
	case "psubscribe":
		return 1, argc - 1, true
	case "publish", "spublish":
		return 1, 1, false
	}
	return 1, 0, false
}

// channelAllowed is ACLCheckChannelAgainstList: a channel is matched
// against the patterns; a pattern (PSUBSCRIBE) only equals one literally.
func channelAllowed(list []string, ch string, pattern bool) bool {
	for _, p := range list {
		if pattern && p == ch || !pattern && glob.Match(p, ch, false) {
			return true
		}
	}
	return false
}

// ChannelAllowed reports whether the user may subscribe to a channel or a
// pattern (ACLUserCheckChannelPerm).
func (st *UserState) ChannelAllowed(ch string, pattern bool) bool {
	for _, s := range st.selectors {
		if s.allChannels || channelAllowed(s.channels, ch, pattern) {
			return true
		}
	}
	return false
}

// KeyAllowed reports whether the user may access a key with the given
// key-spec flags in any selector (ACLUserCheckKeyPerm).
func (st *UserState) KeyAllowed(key string, flags command.KeySpecFlag) bool {
	for _, s := range st.selectors {
		if s.allKeys || s.keyAllowed(key, flags) {
			return true
		}
	}
	return false
}

// SubscriptionsRevoked is the first half of ACLKillPubsubClientsIfNeeded:
// nil when every subscription allowed by old stays allowed by st, else the
// check to run on each subscription of the user's subscribers (true: the
// subscription is no longer allowed).
func (st *UserState) SubscriptionsRevoked(old *UserState) func(ch string, pattern bool) bool {
	var upcoming []string
	for _, s := range st.selectors {
		if s.allChannels {
			return nil
		}
		upcoming = append(upcoming, s.channels...)
	}
	superset := true
	for _, s := range old.selectors {
		if s.allChannels {
			superset = false
			break
		}
		for _, c := range s.channels {
			if !containsString(upcoming, c) {
				superset = false
			}
		}
	}
	if superset {
		return nil
	}
	return func(ch string, pattern bool) bool { return !channelAllowed(upcoming, ch, pattern) }
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// CheckWithFullKeyAccess reports whether one selector allows the command
// and grants perm on every key (allkeys, or a "*" pattern with perm).
func (st *UserState) CheckWithFullKeyAccess(spec *command.Spec, args [][]byte, keys KeySource, perm Perm) bool {
	for _, s := range st.selectors {
		if r, _ := s.check(spec, args, keys); r != OK {
			continue
		}
		if s.allKeys {
			return true
		}
		for _, k := range s.keys {
			if k.Perm&perm == perm && k.Pattern == "*" {
				return true
			}
		}
	}
	return false
}

// DenialText is getAclErrorMessage: the reason a script's call was refused.
func (r Result) DenialText() string {
	switch r {
	case DeniedCmd:
		return "can't run this command or subcommand"
	case DeniedKey:
		return "can't access at least one of the keys mentioned in the command arguments"
	case DeniedChannel:
		return "can't publish to the channel mentioned in the command"
	}
	return "lacking the permissions for the command"
}
