package node

import (
	"time"

	"github.com/shoal-db/shoal/acl"
	"github.com/shoal-db/shoal/command"
	"go.uber.org/zap"
)

// The ACL glue: package acl owns users, rules and checks; this file ties
// them to connections (the user a client is authenticated as, the check in
// the dispatcher, closing the connections of a deleted or restricted
// user) and to the configuration (requirepass, user lines, aclfile,
// acl-pubsub-default, acllog-max-len).

// setupACL builds the users from the configuration at start-up, as Redis's
// ACLLoadUsersAtStartup: requirepass, then the "user" lines, then the ACL
// file; both user lines and an ACL file is an error.
func (s *Server) setupACL() error {
	s.acl = acl.NewRegistry(acl.NewCommands(s.table.all))
	s.acl.SetPubsubDefault(s.cfg.String("acl-pubsub-default") == "allchannels")
	s.acl.Log.SetMaxLen(s.cfg.Int("acllog-max-len"))
	s.acl.SetDefaultPassword(s.cfg.String("requirepass"))
	s.cfg.OnChange("requirepass", func(v string) error { s.acl.SetDefaultPassword(v); return nil })
	s.cfg.OnChange("acl-pubsub-default", func(v string) error {
		s.acl.SetPubsubDefault(v == "allchannels")
		return nil
	})
	s.cfg.OnChange("acllog-max-len", func(string) error {
		s.acl.Log.SetMaxLen(s.cfg.Int("acllog-max-len"))
		return nil
	})
	// CONFIG REWRITE writes every user as a "user" line, unless users
	// live in an ACL file (rewriteConfigUserOption).
	s.cfg.SetRewriteLines("user", func() []string {
		if s.cfg.String("aclfile") != "" {
			return nil
		}
		var lines []string
		for _, l := range s.acl.ConfigLines() {
			lines = append(lines, "user "+l)
		}
		return lines
	})
	users := s.cfg.Users()
	file := s.cfg.String("aclfile")
	if file != "" && len(users) > 0 {
		return errACLStartup("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.")
	}
	warnings, err := s.acl.LoadConfigUsers(users)
	for _, w := range warnings {
		s.log.Info(w)
	}
	if err != nil {
		s.log.Warn(err.Error())
		return errACLStartup("Critical error while loading ACLs. Exiting.")
	}
	if file != "" {
		if _, msg := s.acl.LoadFile(file, file); msg != "" {
			return errACLStartup("Aborting Redis startup because of ACL errors: " + msg)
		}
	}
	return nil
}

type errACLStartup string

func (e errACLStartup) Error() string { return string(e) }

// defaultAuthenticated is what a new connection starts as: authenticated
// when the default user is on and needs no password.
func (s *Server) defaultAuthenticated() bool {
	st := s.acl.Default().State()
	return st.NoPass() && st.Enabled()
}

// authRequired is Redis's authRequired: commands other than no_auth ones
// are refused until AUTH while the default user needs a password or is off.
func (c *Client) authRequired() bool {
	return !c.authenticated && !c.srv.defaultAuthenticated()
}

// userName is the name CLIENT LIST shows: internal clients (the master
// link) have no user and may run anything, as Redis's "(superuser)".
func (c *Client) userName() string {
	if u := c.user.Load(); u != nil {
		return u.Name()
	}
	return "(superuser)"
}

// authenticate checks user and pass (AUTH, HELLO AUTH) and makes the
// connection that user's; on failure it logs the attempt and answers
// WRONGPASS.
func (c *Client) authenticate(user, pass []byte, cmdName []byte) bool {
	u := c.srv.acl.Authenticate(user, pass)
	if u == nil {
		c.aclLog(acl.DeniedAuth, c.aclContext(), string(user), string(cmdName))
		c.Error("WRONGPASS invalid username-password pair or user is disabled.")
		return false
	}
	c.user.Store(u)
	c.authenticated = true
	return true
}

// aclContext is the ACL LOG context of the running command.
func (c *Client) aclContext() acl.Context {
	if c.multi != nil || c.inExec {
		return acl.CtxMulti
	}
	return acl.CtxToplevel
}

// aclLog adds an ACL LOG entry; a script's calls are logged with its
// caller's client information.
func (c *Client) aclLog(r acl.Result, ctx acl.Context, user, object string) {
	info := c
	if c.scriptCaller != nil {
		info = c.scriptCaller
	}
	c.srv.acl.Log.Add(acl.Entry{Reason: r, Context: ctx, Object: object, Username: user,
		At: time.Now(), ClientInfo: info.InfoLine()})
}

// restrictedState returns u's rules when they restrict anything, or nil
// when u may run everything (no user: an internal client; or AllowsAll).
func restrictedState(u *acl.User) *acl.UserState {
	if u == nil {
		return nil
	}
	if st := u.State(); !st.AllowsAll() {
		return st
	}
	return nil
}

// aclKeySource gives the ACL checks a command's keys with their flags,
// computed only when a selector restricts keys.
type aclKeySource struct {
	spec *command.Spec
	args [][]byte
	// pos, when set, are the key positions the dispatcher already found
	// for a command with one fixed key range (GET, SET...): the same keys
	// the flagged walk would find.
	pos []int
	buf []command.KeyRef
}

func (k *aclKeySource) ACLKeyRefs(withFlags bool) []command.KeyRef {
	if k.pos != nil {
		flags := k.spec.KeySpecs[0].Flags
		k.buf = k.buf[:0]
		for _, p := range k.pos {
			k.buf = append(k.buf, command.KeyRef{Pos: p, Flags: flags})
		}
	} else {
		k.buf, _ = command.KeyRefs(k.spec, k.args, k.buf[:0])
	}
	if withFlags && len(k.spec.KeySpecs) > 0 && k.spec.KeySpecs[0].Flags&command.KeyVariableFlags != 0 {
		if f, ok := variableKeyFlags(k.spec, k.args); ok { // node/cmd_command.go
			for i := range k.buf {
				k.buf[i].Flags = f
			}
		}
	}
	return k.buf
}

// fixedKeyRange reports whether the command's keys are one key spec's
// fixed range from a fixed index (no key procedure), so that the
// dispatcher's key positions are the ACL's.
func fixedKeyRange(spec *command.Spec) bool {
	if spec.GetKeys != nil || len(spec.KeySpecs) != 1 {
		return false
	}
	ks := &spec.KeySpecs[0]
	return ks.BeginSearch == command.BeginIndex && ks.FindKeys == command.FindRange && ks.LastKey >= 0 &&
		ks.Flags&command.KeyNotKey == 0
}

// aclCheck runs the ACL check of a command for the user st. It returns the
// denial and the position of the key or channel that caused it.
func (c *Client) aclCheck(st *acl.UserState, spec *command.Spec, args [][]byte) (acl.Result, int) {
	c.aclKeys.spec, c.aclKeys.args = spec, args
	r, pos := st.Check(spec, args, &c.aclKeys)
	c.aclKeys.spec, c.aclKeys.args = nil, nil
	return r, pos
}

// aclObject is what ACL LOG names for a denial: the command, or the key or
// channel at pos.
func aclObject(r acl.Result, spec *command.Spec, args [][]byte, pos int) string {
	if r == acl.DeniedCmd {
		return spec.FullName()
	}
	return string(args[pos])
}

// aclAdmit is processCommand's ACL check: a denied command is logged and
// refused with NOPERM.
func (c *Client) aclAdmit(u *acl.User, st *acl.UserState, spec *command.Spec, args [][]byte) bool {
	if fixedKeyRange(spec) {
		c.aclKeys.pos = c.keyBuf // found by commandSlots for this command
	}
	r, pos := c.aclCheck(st, spec, args)
	c.aclKeys.pos = nil
	if r == acl.OK {
		return true
	}
	c.aclLog(r, c.aclContext(), u.Name(), aclObject(r, spec, args, pos))
	switch r {
	case acl.DeniedCmd:
		c.Error("NOPERM this user has no permissions to run the '" + spec.FullName() + "' command")
	case acl.DeniedKey:
		c.Error("NOPERM this user has no permissions to access one of the keys used as arguments")
	case acl.DeniedChannel:
		c.Error("NOPERM this user has no permissions to access one of the channels used as arguments")
	default:
		c.Error("ERR no permission")
	}
	return false
}

// aclAllowsQueued is EXEC's check of a queued command: the rules may have
// changed since it was queued.
func (c *Client) aclAllowsQueued(spec *command.Spec, args [][]byte) bool {
	u := c.user.Load()
	st := restrictedState(u)
	if st == nil {
		return true
	}
	r, pos := c.aclCheck(st, spec, args)
	if r == acl.OK {
		return true
	}
	reason := "no permission"
	switch r {
	case acl.DeniedCmd:
		reason = "no permission to execute the command or subcommand"
	case acl.DeniedKey:
		reason = "no permission to touch the specified keys"
	case acl.DeniedChannel:
		reason = "no permission to access one of the channels used as arguments"
	}
	c.aclLog(r, acl.CtxMulti, u.Name(), aclObject(r, spec, args, pos))
	c.Error("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + reason)
	return false
}

// aclScriptRefusal checks a script's call for the user running the script
// and returns the script error text, or "".
func (run *scriptRun) aclScriptRefusal(spec *command.Spec, args [][]byte) string {
	u := run.caller.user.Load()
	st := restrictedState(u)
	if st == nil {
		return ""
	}
	r, pos := run.lc.aclCheck(st, spec, args)
	if r == acl.OK {
		return ""
	}
	run.lc.aclLog(r, acl.CtxLua, u.Name(), aclObject(r, spec, args, pos))
	return "The user executing the script " + r.DenialText()
}

// aclPermits is redis.acl_check_cmd: whether the user running the script
// may run the command, nothing logged.
func (run *scriptRun) aclPermits(spec *command.Spec, args [][]byte) bool {
	st := restrictedState(run.caller.user.Load())
	if st == nil {
		return true
	}
	keys := aclKeySource{spec: spec, args: args}
	r, _ := st.Check(spec, args, &keys)
	return r == acl.OK
}

// closeUserClients closes the connections authenticated as deleted users
// (ACLFreeUserAndKillClients): the running client after its reply.
func (s *Server) closeUserClients(cur *Client, gone []*acl.User) {
	if len(gone) == 0 {
		return
	}
	for _, cl := range s.liveClients() {
		u := cl.user.Load()
		for _, g := range gone {
			if u != g {
				continue
			}
			if cl == cur {
				cur.user.Store(s.acl.Default())
				cur.authenticated = false
				cur.CloseAfterReply()
			} else {
				cl.kill()
			}
		}
	}
}

// closeRevokedSubscribers closes the user's subscribers that lost the
// right to one of their subscriptions (ACLKillPubsubClientsIfNeeded).
func (s *Server) closeRevokedSubscribers(cur *Client, ch acl.Change) {
	if ch.Revoked == nil {
		return
	}
	for _, cl := range s.liveClients() {
		if cl.user.Load() != ch.User || !cl.subscribed() {
			continue
		}
		if cl.hasSubscription(ch.Revoked) {
			if cl == cur {
				cur.CloseAfterReply()
			} else {
				cl.kill()
			}
			s.log.Debug("closed a subscriber whose channel permissions were revoked", zap.Int64("id", cl.id))
		}
	}
}

// hasSubscription reports whether one of the client's subscriptions
// matches fn (patterns are passed as patterns).
func (c *Client) hasSubscription(fn func(ch string, pattern bool) bool) bool {
	r := c.srv.pubsub
	r.mu.RLock()
	defer r.mu.RUnlock()
	for k := range c.ps.sets {
		for _, name := range c.ps.sets[k].order {
			if fn(name, pubsubKind(k) == kindPattern) {
				return true
			}
		}
	}
	return false
}

// FullKeyAccess is ACLUserCheckCmdWithUnrestrictedKeyAccess with read
// access (command.Session): SORT's BY and GET patterns.
func (c *Client) FullKeyAccess(args [][]byte) bool {
	owner := c
	if c.scriptCaller != nil {
		owner = c.scriptCaller
	}
	st := restrictedState(owner.user.Load())
	if st == nil {
		return true
	}
	spec, unknownSub := c.srv.table.lookup(args)
	if spec == nil || unknownSub {
		return false
	}
	keys := aclKeySource{spec: spec, args: args}
	return st.CheckWithFullKeyAccess(spec, args, &keys, acl.PermRead)
}
