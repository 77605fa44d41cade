package node

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/internal/testharness"
)

// The tests in this file compare the command metadata table with what a real
// redis-server reports through COMMAND INFO and COMMAND DOCS.

// metaInt is an integer reply's value.
func metaInt(v testharness.Reply) int {
	n, _ := strconv.Atoi(v.Str)
	return n
}

// metaMap reads a RESP2 flattened map (k1, v1, k2, v2, ...).
func metaMap(v testharness.Reply) map[string]testharness.Reply {
	m := make(map[string]testharness.Reply, len(v.Elems)/2)
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m[v.Elems[i].Str] = v.Elems[i+1]
	}
	return m
}

func metaStrings(v testharness.Reply) []string {
	out := []string{}
	for _, e := range v.Elems {
		out = append(out, e.Str)
	}
	return out
}

type metaConn struct {
	c net.Conn
	r *bufio.Reader
}

func metaDial(addr string) (*metaConn, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	return &metaConn{c: c, r: bufio.NewReader(c)}, nil
}

// do sends one command and waits at most d for its reply.
func (m *metaConn) do(d time.Duration, args ...string) (testharness.Reply, error) {
	if err := m.c.SetDeadline(time.Now().Add(d)); err != nil {
		return testharness.Reply{}, err
	}
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := m.c.Write(b); err != nil {
		return testharness.Reply{}, err
	}
	return testharness.ReadReply(m.r)
}

// metaStartRedis starts a throw-away redis-server and returns its address.
func metaStartRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not on PATH")
	}
	// The table describes Redis 7.0; other versions differ in many details.
	if out, err := exec.Command(bin, "--version").Output(); err != nil {
		t.Fatalf("redis-server --version: %v", err)
	} else if !strings.Contains(string(out), " v=7.0.") {
		t.Skipf("the table describes Redis 7.0, redis-server on PATH is %s", strings.TrimSpace(string(out)))
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for range 100 {
		select {
		case <-done:
			t.Fatal("redis-server exited early")
		default:
		}
		if c, err := metaDial(addr); err == nil {
			v, err := c.do(2*time.Second, "PING")
			c.c.Close()
			if err == nil && v.Str == "PONG" {
				return addr
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("redis-server did not answer PING in time")
	return ""
}

// metaWithImplicitACL adds the categories Redis 7.0 derives from the flags.
func metaWithImplicitACL(flags command.CmdFlag, acl command.ACLCat) command.ACLCat {
	if flags&command.FlagWrite != 0 {
		acl |= command.CatWrite
	}
	if flags&command.FlagReadonly != 0 && acl&command.CatScripting == 0 {
		acl |= command.CatRead
	}
	if flags&command.FlagAdmin != 0 {
		acl |= command.CatAdmin | command.CatDangerous
	}
	if flags&command.FlagPubsub != 0 {
		acl |= command.CatPubsub
	}
	if flags&command.FlagFast != 0 {
		acl |= command.CatFast
	}
	if flags&command.FlagBlocking != 0 {
		acl |= command.CatBlocking
	}
	if acl&command.CatFast == 0 {
		acl |= command.CatSlow
	}
	return acl
}

// metaTable flattens command.AllMeta into "name" / "container|sub" entries.
func metaTable(t *testing.T) map[string]*command.Spec {
	t.Helper()
	table := map[string]*command.Spec{}
	add := func(full string, s *command.Spec) {
		if s.Name != strings.ToLower(s.Name) || strings.Contains(s.Name, "|") {
			t.Errorf("%s: bad Name %q", full, s.Name)
		}
		if s.Handler != nil || s.Parent != nil || s.GetKeys != nil {
			t.Errorf("%s: Handler, Parent and GetKeys must be left nil", full)
		}
		if s.Flags&command.FlagMovableKeys != 0 {
			t.Errorf("%s: movablekeys is derived, it must not be set in the table", full)
		}
		if _, dup := table[full]; dup {
			t.Errorf("%s: defined twice", full)
		}
		table[full] = s
	}
	for _, s := range command.AllMeta() {
		add(s.Name, s)
		for key, sub := range s.Subcommands {
			if key != sub.Name {
				t.Errorf("%s: subcommand %q stored under key %q", s.Name, sub.Name, key)
			}
			if len(sub.Subcommands) != 0 {
				t.Errorf("%s|%s: nested subcommands", s.Name, sub.Name)
			}
			add(s.Name+"|"+sub.Name, sub)
		}
	}
	return table
}

func metaFlagNames(f command.CmdFlag) []string {
	out := []string{}
	for _, fn := range command.CmdFlagNames {
		if f&fn.Flag != 0 {
			out = append(out, fn.Name)
		}
	}
	return out
}

func metaCatNames(c command.ACLCat) []string {
	out := []string{}
	for _, cn := range command.ACLCatNames {
		if c&cn.Cat != 0 {
			out = append(out, "@"+cn.Name)
		}
	}
	return out
}

func metaKeySpecFlagNames(f command.KeySpecFlag) []string {
	out := []string{}
	for _, kn := range command.KeySpecFlagNames {
		if f&kn.Flag != 0 {
			out = append(out, kn.Name)
		}
	}
	return out
}

func metaSorted(s []string) []string {
	s = append([]string{}, s...)
	sort.Strings(s)
	return s
}

// metaParseKeySpec converts one key spec of COMMAND INFO into our type.
func metaParseKeySpec(v testharness.Reply) (command.KeySpec, error) {
	m := metaMap(v)
	var ks command.KeySpec
	ks.Notes = m["notes"].Str
	for _, f := range metaStrings(m["flags"]) {
		found := false
		for _, kn := range command.KeySpecFlagNames {
			if kn.Name == f {
				ks.Flags |= kn.Flag
				found = true
			}
		}
		if !found {
			return ks, fmt.Errorf("unknown key spec flag %q", f)
		}
	}
	bs := metaMap(m["begin_search"])
	bspec := metaMap(bs["spec"])
	switch bs["type"].Str {
	case "index":
		ks.BeginSearch, ks.Index = command.BeginIndex, metaInt(bspec["index"])
	case "keyword":
		ks.BeginSearch, ks.Keyword, ks.StartFrom = command.BeginKeyword, bspec["keyword"].Str, metaInt(bspec["startfrom"])
	case "unknown":
		ks.BeginSearch = command.BeginUnknown
	default:
		return ks, fmt.Errorf("unknown begin_search type %q", bs["type"].Str)
	}
	fk := metaMap(m["find_keys"])
	fspec := metaMap(fk["spec"])
	switch fk["type"].Str {
	case "range":
		ks.FindKeys = command.FindRange
		ks.LastKey, ks.KeyStep, ks.Limit = metaInt(fspec["lastkey"]), metaInt(fspec["keystep"]), metaInt(fspec["limit"])
	case "keynum":
		ks.FindKeys = command.FindKeynum
		ks.KeynumIdx, ks.FirstKey, ks.KeyStep = metaInt(fspec["keynumidx"]), metaInt(fspec["firstkey"]), metaInt(fspec["keystep"])
	case "unknown":
		ks.FindKeys = command.FindUnknown
	default:
		return ks, fmt.Errorf("unknown find_keys type %q", fk["type"].Str)
	}
	return ks, nil
}

// TestCommandMetaMatchesRedis checks every command and subcommand against
// COMMAND INFO and COMMAND DOCS of a live redis-server.
func TestCommandMetaMatchesRedis(t *testing.T) {
	addr := metaStartRedis(t)
	c, err := metaDial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.c.Close()
	info, err := c.do(10*time.Second, "COMMAND", "INFO")
	if err != nil || info.Kind != '*' {
		t.Fatalf("COMMAND INFO: %v %+v", err, info.Str)
	}
	docsReply, err := c.do(10*time.Second, "COMMAND", "DOCS")
	if err != nil || docsReply.Kind != '*' {
		t.Fatalf("COMMAND DOCS: %v %+v", err, docsReply.Str)
	}

	// Flatten Redis's view: full name → COMMAND INFO entry and doc map.
	redisInfo := map[string]testharness.Reply{}
	redisDocs := map[string]map[string]testharness.Reply{}
	var addInfo func(v testharness.Reply)
	addInfo = func(v testharness.Reply) {
		if len(v.Elems) < 10 {
			t.Fatalf("COMMAND INFO entry too short: %+v", v)
		}
		redisInfo[v.Elems[0].Str] = v
		for _, s := range v.Elems[9].Elems {
			addInfo(s)
		}
	}
	for _, v := range info.Elems {
		addInfo(v)
	}
	var addDocs func(m map[string]testharness.Reply)
	addDocs = func(m map[string]testharness.Reply) {
		for name, d := range m {
			dm := metaMap(d)
			redisDocs[name] = dm
			if subs, ok := dm["subcommands"]; ok {
				addDocs(metaMap(subs))
			}
		}
	}
	addDocs(metaMap(docsReply))

	table := metaTable(t)
	for name := range redisInfo {
		if _, ok := table[name]; !ok {
			t.Errorf("%s: listed by Redis COMMAND INFO, missing from the table", name)
		}
		if _, ok := redisDocs[name]; !ok {
			t.Errorf("%s: no COMMAND DOCS entry from Redis", name)
		}
	}
	var names []string
	for name := range table {
		names = append(names, name)
	}
	sort.Strings(names)
	subs := 0
	for _, name := range names {
		spec := table[name]
		if strings.Contains(name, "|") {
			subs++
		}
		ri, ok := redisInfo[name]
		if !ok {
			t.Errorf("%s: in the table, not listed by Redis", name)
			continue
		}
		if got, want := spec.Arity, metaInt(ri.Elems[1]); got != want {
			t.Errorf("%s: arity %d, Redis %d", name, got, want)
		}

		// Flags: Redis hides may_replicate and protected, and movablekeys is derived.
		var redisFlags []string
		for _, f := range metaStrings(ri.Elems[2]) {
			if f != "movablekeys" {
				redisFlags = append(redisFlags, f)
			}
		}
		ourFlags := metaFlagNames(spec.Flags &^ (command.FlagMayReplicate | command.FlagProtected))
		if got, want := metaSorted(ourFlags), metaSorted(redisFlags); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: flags %v, Redis %v", name, got, want)
		}

		ourACL := metaCatNames(metaWithImplicitACL(spec.Flags, spec.ACL))
		if got, want := metaSorted(ourACL), metaSorted(metaStrings(ri.Elems[6])); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: ACL categories (with implicit) %v, Redis %v", name, got, want)
		}

		if got, want := spec.Tips, metaStrings(ri.Elems[7]); !(len(got) == 0 && len(want) == 0) && !reflect.DeepEqual(got, want) {
			t.Errorf("%s: tips %q, Redis %q", name, got, want)
		}

		var redisKS []command.KeySpec
		for i, kv := range ri.Elems[8].Elems {
			ks, err := metaParseKeySpec(kv)
			if err != nil {
				t.Errorf("%s: Redis key spec %d: %v", name, i, err)
			}
			redisKS = append(redisKS, ks)
		}
		if len(spec.KeySpecs) != len(redisKS) {
			t.Errorf("%s: %d key specs, Redis %d", name, len(spec.KeySpecs), len(redisKS))
		} else {
			for i := range redisKS {
				if got, want := spec.KeySpecs[i], redisKS[i]; got != want {
					t.Errorf("%s: key spec %d:\n  ours  %+v (flags %v)\n  Redis %+v (flags %v)", name, i,
						got, metaKeySpecFlagNames(got.Flags), want, metaKeySpecFlagNames(want.Flags))
				}
			}
		}

		rd := redisDocs[name]
		want := command.Doc{
			Summary: rd["summary"].Str, Since: rd["since"].Str, Group: rd["group"].Str,
			Complexity: rd["complexity"].Str, DeprecatedSince: rd["deprecated_since"].Str,
			ReplacedBy: rd["replaced_by"].Str,
		}
		if df, ok := rd["doc_flags"]; ok {
			want.DocFlags = metaStrings(df)
		}
		got := spec.Doc
		if len(got.DocFlags) == 0 && len(want.DocFlags) == 0 {
			got.DocFlags, want.DocFlags = nil, nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: doc\n  ours  %+v\n  Redis %+v", name, got, want)
		}
		if m, ok := rd["module"]; ok {
			t.Errorf("%s: Redis reports module %q, which the table cannot express", name, m.Str)
		}
	}
	t.Logf("%d commands, %d subcommands checked against Redis", len(names)-subs, subs)
}

// TestCommandMetaHiddenFlags checks the flags Redis 7.0 has but does not show
// in COMMAND, by their observable effect on the live server:
//   - a command that is neither write nor may_replicate runs during CLIENT
//     PAUSE WRITE, the others are held;
//   - a protected command is refused while enable-debug-command and
//     enable-module-command are at their default ("no").
//
// Every command is sent with dummy arguments to just satisfy its arity, each
// on a fresh connection (the pause and protection checks come before the
// command runs; the few that would still do harm are skipped).
func TestCommandMetaHiddenFlags(t *testing.T) {
	addr := metaStartRedis(t)
	pc, err := metaDial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.c.Close()
	if v, err := pc.do(5*time.Second, "CLIENT", "PAUSE", "600000", "WRITE"); err != nil || v.Str != "OK" {
		t.Fatalf("CLIENT PAUSE: %v %q", err, v.Str)
	}
	skip := map[string]bool{
		"shutdown": true, "client|pause": true, "client|unpause": true, // would end the server or the pause
		"sync": true, "psync": true, // start a replication stream (and a fork)
	}
	table := metaTable(t)
	var names []string
	for name := range table {
		names = append(names, name)
	}
	sort.Strings(names)
	// Probe all commands at once, each on its own connection: the held ones
	// only time out, so this takes about one short wait in total.
	problems := make([]string, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		spec := table[name]
		if skip[name] || len(spec.Subcommands) > 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			problems[i] = metaProbeHidden(addr, name, spec)
		}()
	}
	wg.Wait()
	for _, p := range problems {
		if p != "" {
			t.Error(p)
		}
	}
}

// metaProbeHidden sends one command with dummy arguments and reports a
// mismatch between its reception and its write/may_replicate/protected flags.
func metaProbeHidden(addr, name string, spec *command.Spec) string {
	args := strings.Split(name, "|")
	n := spec.Arity
	if n < 0 {
		n = -n
	}
	for len(args) < n {
		args = append(args, "x")
	}
	held := spec.Flags&(command.FlagWrite|command.FlagMayReplicate) != 0
	// An answer is due at once; the bound is generous because a loaded
	// machine can stall Redis's one thread for seconds (240 probes at once,
	// SAVE's fsync behind other tests' disk traffic). Only the held probes
	// wait out their bound, so this costs nothing when the test passes.
	wait := testharness.Slack(20 * time.Second)
	if held {
		wait = 500 * time.Millisecond
	}
	c, err := metaDial(addr)
	if err != nil {
		return fmt.Sprintf("%s: %v", name, err)
	}
	v, err := c.do(wait, args...)
	c.c.Close()
	var ne net.Error
	timedOut := errors.As(err, &ne) && ne.Timeout()
	if err != nil && !timedOut {
		return fmt.Sprintf("%s: %v", name, err)
	}
	refused := err == nil && v.Kind == '-' && strings.Contains(v.Str, "command not allowed")
	switch {
	case spec.Flags&command.FlagProtected != 0 && !refused:
		return fmt.Sprintf("%s: marked protected, but Redis did not refuse it (reply %q, err %v)", name, v.Str, err)
	case spec.Flags&command.FlagProtected == 0 && refused:
		return fmt.Sprintf("%s: Redis refuses it as protected (%q); command.FlagProtected missing", name, v.Str)
	case refused:
	case held && !timedOut:
		return fmt.Sprintf("%s: marked write/may_replicate, but Redis answered during CLIENT PAUSE WRITE: %q", name, v.Str)
	case !held && timedOut:
		return fmt.Sprintf("%s: Redis held it during CLIENT PAUSE WRITE; command.FlagMayReplicate missing?", name)
	}
	return ""
}
