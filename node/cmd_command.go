package node

import (
	"strings"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/glob"
)

// COMMAND and its subcommands, in Redis 7.0's reply formats. Only
// implemented commands exist for clients: COMMAND, COUNT, LIST, INFO and
// DOCS leave out the commands (and subcommands) that have no handler yet,
// exactly as if the server did not know them.

func commandHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"command":                 cmdCommandAll,
		"command|count":           func(c *Client, args [][]byte) { c.Int(int64(len(c.srv.table.all))) },
		"command|info":            cmdCommandInfo,
		"command|docs":            cmdCommandDocs,
		"command|list":            cmdCommandList,
		"command|getkeys":         func(c *Client, args [][]byte) { cmdCommandGetKeys(c, args, false) },
		"command|getkeysandflags": func(c *Client, args [][]byte) { cmdCommandGetKeys(c, args, true) },
		"command|help":            func(c *Client, args [][]byte) { c.ReplyHelp(args, commandHelpLines) },
	}
}

var commandHelpLines = []string{
	"(no subcommand)",
	"    Return details about all Redis commands.",
	"COUNT",
	"    Return the total number of commands in this Redis server.",
	"LIST",
	"    Return a list of all commands in this Redis server.",
	"INFO [<command-name> ...]",
	"    Return details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"DOCS [<command-name> ...]",
	"    Return documentation details about multiple Redis commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"GETKEYS <full-command>",
	"    Return the keys from a full Redis command.",
	"GETKEYSANDFLAGS <full-command>",
	"    Return the keys and the access flags from a full Redis command.",
}

func cmdCommandAll(c *Client, args [][]byte) {
	all := c.srv.table.all
	c.Array(len(all))
	for _, spec := range all {
		c.commandInfo(spec)
	}
}

func cmdCommandInfo(c *Client, args [][]byte) {
	if len(args) == 2 {
		cmdCommandAll(c, args)
		return
	}
	c.Array(len(args) - 2)
	for _, name := range args[2:] {
		if spec := c.srv.table.lookupName(string(name)); spec != nil {
			c.commandInfo(spec)
		} else {
			c.Null()
		}
	}
}

// implementedSubcommands returns a container's subcommands that have a
// handler, in name order.
func implementedSubcommands(spec *command.Spec) []*command.Spec {
	subs := sortedSubcommands(spec)
	out := subs[:0]
	for _, sub := range subs {
		if sub.Handler != nil {
			out = append(out, sub)
		}
	}
	return out
}

// commandInfo writes one COMMAND INFO entry: name, arity, flags, first key,
// last key, key step, ACL categories, tips, key specs, subcommands.
func (c *Client) commandInfo(spec *command.Spec) {
	c.Array(10)
	c.BulkString(spec.FullName())
	c.Int(int64(spec.Arity))
	c.commandFlags(spec.Flags)
	first, last, step := spec.LegacyRange()
	c.Int(int64(first))
	c.Int(int64(last))
	c.Int(int64(step))
	n := 0
	for _, cat := range command.ACLCatNames {
		if spec.ACL&cat.Cat != 0 {
			n++
		}
	}
	c.Set(n)
	for _, cat := range command.ACLCatNames {
		if spec.ACL&cat.Cat != 0 {
			c.Status("@" + cat.Name)
		}
	}
	c.Set(len(spec.Tips))
	for _, tip := range spec.Tips {
		c.BulkString(tip)
	}
	c.Set(len(spec.KeySpecs))
	for i := range spec.KeySpecs {
		c.keySpec(&spec.KeySpecs[i])
	}
	if !spec.IsContainer() {
		c.Set(0)
		return
	}
	subs := implementedSubcommands(spec)
	c.Array(len(subs))
	for _, sub := range subs {
		c.commandInfo(sub)
	}
}

// commandFlags writes the flags COMMAND shows, in Redis's order.
func (c *Client) commandFlags(f command.CmdFlag) {
	n := 0
	for _, fl := range command.CmdFlagNames {
		if f&fl.Flag != 0 {
			n++
		}
	}
	c.Set(n)
	for _, fl := range command.CmdFlagNames {
		if f&fl.Flag != 0 {
			c.Status(fl.Name)
		}
	}
}

// keySpecFlags writes a key spec's flags, in Redis's order.
func (c *Client) keySpecFlags(f command.KeySpecFlag) {
	n := 0
	for _, fl := range command.KeySpecFlagNames {
		if f&fl.Flag != 0 {
			n++
		}
	}
	c.Set(n)
	for _, fl := range command.KeySpecFlagNames {
		if f&fl.Flag != 0 {
			c.Status(fl.Name)
		}
	}
}

// keySpec writes one key specification map (addReplyCommandKeySpecs).
func (c *Client) keySpec(ks *command.KeySpec) {
	n := 3
	if ks.Notes != "" {
		n++
	}
	c.Map(n)
	if ks.Notes != "" {
		c.BulkString("notes")
		c.BulkString(ks.Notes)
	}
	c.BulkString("flags")
	c.keySpecFlags(ks.Flags)

	c.BulkString("begin_search")
	c.Map(2)
	c.BulkString("type")
	switch ks.BeginSearch {
	case command.BeginIndex:
		c.BulkString("index")
		c.BulkString("spec")
		c.Map(1)
		c.BulkString("index")
		c.Int(int64(ks.Index))
	case command.BeginKeyword:
		c.BulkString("keyword")
		c.BulkString("spec")
		c.Map(2)
		c.BulkString("keyword")
		c.BulkString(ks.Keyword)
		c.BulkString("startfrom")
		c.Int(int64(ks.StartFrom))
	default:
		c.BulkString("unknown")
		c.BulkString("spec")
		c.Map(0)
	}

	c.BulkString("find_keys")
	c.Map(2)
	c.BulkString("type")
	switch ks.FindKeys {
	case command.FindRange:
		c.BulkString("range")
		c.BulkString("spec")
		c.Map(3)
		c.BulkString("lastkey")
		c.Int(int64(ks.LastKey))
		c.BulkString("keystep")
		c.Int(int64(ks.KeyStep))
		c.BulkString("limit")
		c.Int(int64(ks.Limit))
	case command.FindKeynum:
		c.BulkString("keynum")
		c.BulkString("spec")
		c.Map(3)
		c.BulkString("keynumidx")
		c.Int(int64(ks.KeynumIdx))
		c.BulkString("firstkey")
		c.Int(int64(ks.FirstKey))
		c.BulkString("keystep")
		c.Int(int64(ks.KeyStep))
	default:
		c.BulkString("unknown")
		c.BulkString("spec")
		c.Map(0)
	}
}

func cmdCommandDocs(c *Client, args [][]byte) {
	if len(args) == 2 {
		all := c.srv.table.all
		c.Map(len(all))
		for _, spec := range all {
			c.BulkString(spec.FullName())
			c.commandDocs(spec)
		}
		return
	}
	var found []*command.Spec
	for _, name := range args[2:] {
		if spec := c.srv.table.lookupName(string(name)); spec != nil {
			found = append(found, spec)
		}
	}
	c.Map(len(found))
	for _, spec := range found {
		c.BulkString(spec.FullName())
		c.commandDocs(spec)
	}
}

// commandDocs writes one COMMAND DOCS map. shoal's metadata has no argument
// descriptions or history, so those fields are absent.
func (c *Client) commandDocs(spec *command.Spec) {
	d := &spec.Doc
	n := 1 // group
	for _, present := range []bool{d.Summary != "", d.Since != "", d.Complexity != "",
		len(d.DocFlags) > 0, d.DeprecatedSince != "", d.ReplacedBy != "", spec.IsContainer()} {
		if present {
			n++
		}
	}
	c.Map(n)
	if d.Summary != "" {
		c.BulkString("summary")
		c.BulkString(d.Summary)
	}
	if d.Since != "" {
		c.BulkString("since")
		c.BulkString(d.Since)
	}
	c.BulkString("group")
	c.BulkString(d.Group)
	if d.Complexity != "" {
		c.BulkString("complexity")
		c.BulkString(d.Complexity)
	}
	if len(d.DocFlags) > 0 {
		c.BulkString("doc_flags")
		c.Set(len(d.DocFlags))
		for _, f := range d.DocFlags {
			c.Status(f)
		}
	}
	if d.DeprecatedSince != "" {
		c.BulkString("deprecated_since")
		c.BulkString(d.DeprecatedSince)
	}
	if d.ReplacedBy != "" {
		c.BulkString("replaced_by")
		c.BulkString(d.ReplacedBy)
	}
	if spec.IsContainer() {
		subs := implementedSubcommands(spec)
		c.BulkString("subcommands")
		c.Map(len(subs))
		for _, sub := range subs {
			c.BulkString(sub.FullName())
			c.commandDocs(sub)
		}
	}
}

// commandListFilter is COMMAND LIST's FILTERBY condition.
type commandListFilter struct {
	kind string // "", "module", "aclcat", "pattern"
	arg  string
	cat  command.ACLCat
}

func (f *commandListFilter) keep(spec *command.Spec) bool {
	switch f.kind {
	case "module":
		return false // no module commands exist
	case "aclcat":
		return f.cat != 0 && spec.ACL&f.cat != 0
	case "pattern":
		return glob.Match(f.arg, spec.FullName(), true)
	}
	return true
}

func cmdCommandList(c *Client, args [][]byte) {
	var f commandListFilter
	for i := 2; i < len(args); i++ {
		if !command.ArgEquals(args[i], "filterby") || len(args)-1-i != 2 {
			c.ErrSyntax()
			return
		}
		kind := strings.ToLower(string(args[i+1]))
		switch kind {
		case "module", "aclcat", "pattern":
		default:
			c.ErrSyntax()
			return
		}
		f.kind, f.arg = kind, string(args[i+2])
		if kind == "aclcat" {
			for _, cat := range command.ACLCatNames {
				if strings.EqualFold(cat.Name, f.arg) {
					f.cat = cat.Cat
				}
			}
		}
		i += 2
	}
	var names []string
	for _, spec := range c.srv.table.all {
		if f.keep(spec) {
			names = append(names, spec.FullName())
		}
		if spec.IsContainer() {
			for _, sub := range implementedSubcommands(spec) {
				if f.keep(sub) {
					names = append(names, sub.FullName())
				}
			}
		}
	}
	c.StringArray(names)
}

// cmdCommandGetKeys implements COMMAND GETKEYS and GETKEYSANDFLAGS with the
// dispatcher's own key extractor (command.Keys).
func cmdCommandGetKeys(c *Client, args [][]byte, withFlags bool) {
	cmdArgs := args[2:]
	spec, unknownSub := c.srv.table.lookup(cmdArgs)
	switch {
	case spec == nil || unknownSub:
		c.Error("ERR Invalid command specified")
		return
	case !spec.HasKeyArguments():
		c.Error("ERR The command has no key arguments")
		return
	case !spec.ArityOK(len(cmdArgs)):
		c.Error("ERR Invalid number of arguments specified for command")
		return
	}
	keys, err := command.Keys(spec, cmdArgs, nil)
	if err != nil || len(keys) == 0 {
		if spec.Flags&command.FlagNoMandatoryKeys != 0 {
			c.Array(0)
		} else {
			c.Error("ERR Invalid arguments specified for command")
		}
		return
	}
	var flags []command.KeySpecFlag
	if withFlags {
		flags = keyFlags(spec, cmdArgs, keys)
	}
	c.Array(len(keys))
	for i, p := range keys {
		if !withFlags {
			c.Bulk(cmdArgs[p])
			continue
		}
		c.Array(2)
		c.Bulk(cmdArgs[p])
		c.keySpecFlags(flags[i])
	}
}

// keyFlags attributes each key position to the key spec that finds it, by
// running the key extractor on each spec alone; a position no single spec
// finds (a key procedure's) takes the flags the procedure gives it
// (GetKeyFlags: SORT's STORE destination is OW update), else the first
// spec's.
func keyFlags(spec *command.Spec, args [][]byte, keys []int) []command.KeySpecFlag {
	if f, ok := variableKeyFlags(spec, args); ok {
		out := make([]command.KeySpecFlag, len(keys))
		for i := range out {
			out[i] = f
		}
		return out
	}
	byPos := map[int]command.KeySpecFlag{}
	for i := range spec.KeySpecs {
		one := *spec
		one.GetKeys = nil
		one.KeySpecs = spec.KeySpecs[i : i+1]
		pos, err := command.Keys(&one, args, nil)
		if err != nil {
			continue
		}
		for _, p := range pos {
			if _, seen := byPos[p]; !seen {
				byPos[p] = spec.KeySpecs[i].Flags
			}
		}
	}
	out := make([]command.KeySpecFlag, len(keys))
	for i, p := range keys {
		f, ok := byPos[p]
		switch {
		case ok:
		case spec.GetKeyFlags != nil:
			f = spec.GetKeyFlags(args, p)
		case len(spec.KeySpecs) > 0:
			f = spec.KeySpecs[0].Flags
		}
		out[i] = f
	}
	return out
}

// variableKeyFlags gives the flags of the commands whose key spec is marked
// variable_flags, which depend on the arguments (Redis's setGetKeys and
// bitfieldGetKeys): SET reads its key only with GET, BITFIELD writes it
// unless every operation is a GET.
func variableKeyFlags(spec *command.Spec, args [][]byte) (command.KeySpecFlag, bool) {
	switch spec.FullName() {
	case "set":
		for _, a := range args[min(3, len(args)):] {
			if command.ArgEquals(a, "get") {
				return command.KeyRW | command.KeyAccess | command.KeyUpdate, true
			}
		}
		return command.KeyOW | command.KeyUpdate, true
	case "bitfield":
		readonly := true
		for i := 2; i < len(args); i++ {
			rem := len(args) - i - 1
			switch {
			case command.ArgEquals(args[i], "get") && rem >= 2:
				i += 2
			case (command.ArgEquals(args[i], "set") || command.ArgEquals(args[i], "incrby")) && rem >= 3:
				readonly = false
			case command.ArgEquals(args[i], "overflow") && rem >= 1:
				i++
			default:
				readonly = false
			}
			if !readonly {
				break
			}
		}
		if readonly {
			return command.KeyRO | command.KeyAccess, true
		}
		return command.KeyRW | command.KeyAccess | command.KeyUpdate, true
	}
	return 0, false
}
