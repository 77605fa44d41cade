package command

// The command metadata table: one Spec per Redis 7.0 command, grouped
// by Redis command group in meta_<group>.go. It transcribes what a live
// Redis 7.0.15 reports through COMMAND INFO and COMMAND DOCS, and
// node/commandmeta_test.go checks it against a real redis-server.
//
// Conventions:
//
//   - Name is lower case; a subcommand's Name is the bare subcommand ("get"),
//     its Arity counts the container word (CONFIG GET is -3), and it lives in
//     its container's Subcommands map under that same name.
//   - Flags are the flags COMMAND INFO shows, except movablekeys, which is
//     derived from the key specs / GetKeys. Redis 7.0.15 shows movablekeys for:
//     blmpop bzmpop eval eval_ro evalsha evalsha_ro fcall fcall_ro georadius
//     georadiusbymember lmpop migrate sintercard sort sort_ro xread xreadgroup
//     zdiff zdiffstore zinter zintercard zinterstore zmpop zunion zunionstore
//     (each is also marked "COMMAND shows movablekeys" where it is defined).
//   - Two flags Redis 7.0 has but hides from COMMAND are recorded too, as
//     observed on the live server: FlagMayReplicate (EVAL, EVALSHA, FCALL,
//     PFCOUNT, PUBLISH, SPUBLISH: held by CLIENT PAUSE WRITE though not write
//     commands) and FlagProtected (DEBUG, MODULE LOAD/LOADEX/UNLOAD: refused
//     unless enable-debug-command / enable-module-command allows them).
//   - ACL holds only the explicit categories. The implicit ones are added
//     later, by Redis's rule: write → @write; readonly (unless @scripting) →
//     @read; admin → @admin @dangerous; pubsub → @pubsub; fast → @fast;
//     blocking → @blocking; and every command without @fast gets @slow.
//   - Handler, Parent, GetKeys and the derived fields are left zero here.

// AllMeta returns freshly allocated specs for every command.
func AllMeta() []*Spec {
	groups := [][]*Spec{
		metaBitmap(), metaCluster(), metaConnection(), metaGeneric(), metaGeo(),
		metaHash(), metaHyperLogLog(), metaList(), metaPubsub(), metaScripting(),
		metaServer(), metaSet(), metaSortedSet(), metaStream(), metaString(),
		metaTransactions(),
	}
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	all := make([]*Spec, 0, n)
	for _, g := range groups {
		all = append(all, g...)
	}
	return all
}

// subcommandMap indexes a container's subcommands by name.
func subcommandMap(subs []*Spec) map[string]*Spec {
	m := make(map[string]*Spec, len(subs))
	for _, s := range subs {
		m[s.Name] = s
	}
	return m
}

// NewDoc is the COMMAND DOCS summary, since, group and complexity.
func NewDoc(summary, since, group, complexity string) Doc {
	return Doc{Summary: summary, Since: since, Group: group, Complexity: complexity}
}

// deprecatedDoc marks d deprecated since the given version, naming the replacement.
func deprecatedDoc(d Doc, since, replacedBy string) Doc {
	d.DeprecatedSince, d.ReplacedBy = since, replacedBy
	d.DocFlags = append(d.DocFlags, "deprecated")
	return d
}

// syscmdDoc marks d as a system command (not meant to be called by users).
func syscmdDoc(d Doc) Doc {
	d.DocFlags = append(d.DocFlags, "syscmd")
	return d
}

// ksIndexRange: the first key is argv[index]; lastKey is relative to it (-1 =
// the last argument), keys are step apart, limit as in Redis.
func ksIndexRange(flags KeySpecFlag, index, lastKey, step, limit int) KeySpec {
	return KeySpec{Flags: flags, BeginSearch: BeginIndex, Index: index,
		FindKeys: FindRange, LastKey: lastKey, KeyStep: step, Limit: limit}
}

// ksIndexKeynum: starting at argv[index], the key count is at keynumIdx and the
// keys start at firstKey (both relative), step apart.
func ksIndexKeynum(flags KeySpecFlag, index, keynumIdx, firstKey, step int) KeySpec {
	return KeySpec{Flags: flags, BeginSearch: BeginIndex, Index: index,
		FindKeys: FindKeynum, KeynumIdx: keynumIdx, FirstKey: firstKey, KeyStep: step}
}

// ksKeywordRange: the keys follow keyword, searched from startFrom (negative =
// backwards from the end); then as ksIndexRange.
func ksKeywordRange(flags KeySpecFlag, keyword string, startFrom, lastKey, step, limit int) KeySpec {
	return KeySpec{Flags: flags, BeginSearch: BeginKeyword, Keyword: keyword, StartFrom: startFrom,
		FindKeys: FindRange, LastKey: lastKey, KeyStep: step, Limit: limit}
}

// ksKeywordKeynum: the keys follow keyword, searched from startFrom; then as
// ksIndexKeynum.
func ksKeywordKeynum(flags KeySpecFlag, keyword string, startFrom, keynumIdx, firstKey, step int) KeySpec {
	return KeySpec{Flags: flags, BeginSearch: BeginKeyword, Keyword: keyword, StartFrom: startFrom,
		FindKeys: FindKeynum, KeynumIdx: keynumIdx, FirstKey: firstKey, KeyStep: step}
}

// ksUnknown: keys the spec cannot locate (begin_search and find_keys "unknown").
func ksUnknown(flags KeySpecFlag) KeySpec {
	return KeySpec{Flags: flags, BeginSearch: BeginUnknown, FindKeys: FindUnknown}
}

// ksNote attaches Redis's notes to a key spec.
func ksNote(notes string, ks KeySpec) KeySpec {
	ks.Notes = notes
	return ks
}
