package node

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dirtyScript is a representative set of writes (and no-op writes) whose
// change counts Redis's handlers define: per element pushed, per key
// deleted, per field set, only when a bit changed, and so on.
var dirtyScript = [][]string{
	{"SET", "s", "v"},
	{"SET", "s", "v"},
	{"SET", "s", "w", "NX"},
	{"MSET", "a", "1", "b", "2", "c", "3"},
	{"MSETNX", "a", "1", "d", "4"},
	{"MSETNX", "e", "1", "f", "4"},
	{"INCR", "n"},
	{"INCRBY", "n", "5"},
	{"INCRBYFLOAT", "n", "1.5"},
	{"APPEND", "s", "xyz"},
	{"SETRANGE", "s", "1", "ab"},
	{"GETSET", "s", "q"},
	{"GETDEL", "nokey"},
	{"GETEX", "s", "EX", "100"},
	{"GETEX", "s"},
	{"PERSIST", "s"},
	{"EXPIRE", "s", "100"},
	{"EXPIRE", "nokey", "100"},
	{"PEXPIREAT", "a", "99999999999999"},
	{"DEL", "a", "b", "nokey", "c"},
	{"UNLINK", "d", "nokey2"},
	{"SETBIT", "bits", "7", "1"},
	{"SETBIT", "bits", "7", "1"},
	{"SETBIT", "bits", "7", "0"},
	{"BITFIELD", "bf", "SET", "u8", "0", "255", "SET", "u8", "8", "0"},
	{"BITFIELD", "bf", "SET", "u8", "0", "255", "INCRBY", "u8", "8", "1"},
	{"BITOP", "OR", "dest", "bits", "bf"},
	{"RPUSH", "l", "a", "b", "c", "d", "e", "a"},
	{"LPUSH", "l", "x", "y"},
	{"LPUSHX", "nol", "x", "y"},
	{"RPUSHX", "l", "z"},
	{"LPOP", "l"},
	{"RPOP", "l", "2"},
	{"LREM", "l", "0", "a"},
	{"LSET", "l", "0", "q"},
	{"LINSERT", "l", "BEFORE", "q", "w"},
	{"LTRIM", "l", "1", "-1"},
	{"LTRIM", "l", "0", "-1"},
	{"LMOVE", "l", "l2", "LEFT", "RIGHT"},
	{"LMPOP", "2", "l", "l2", "LEFT", "COUNT", "5"},
	{"SADD", "set", "a", "b", "c", "a"},
	{"SADD", "set", "a"},
	{"SREM", "set", "a", "zz"},
	{"SMOVE", "set", "set2", "b"},
	{"SADD", "set2", "c"},
	{"SMOVE", "set", "set2", "c"},
	{"SADD", "set3", "1", "2", "3", "4", "5"},
	{"SPOP", "set3"},
	{"SPOP", "set3", "2"},
	{"SINTERSTORE", "set4", "set2", "set3"},
	{"SUNIONSTORE", "set4", "set2", "set3"},
	{"SDIFFSTORE", "set5", "nokey", "set3"},
	{"HSET", "h", "f1", "v1", "f2", "v2"},
	{"HSET", "h", "f1", "v1"},
	{"HMSET", "h", "f3", "v3", "f4", "v4"},
	{"HSETNX", "h", "f1", "x"},
	{"HSETNX", "h", "f9", "x"},
	{"HDEL", "h", "f1", "f2", "nof"},
	{"HINCRBY", "h", "n", "2"},
	{"HINCRBYFLOAT", "h", "fl", "2.5"},
	{"ZADD", "z", "1", "a", "2", "b", "3", "c"},
	{"ZADD", "z", "1", "a", "5", "b"},
	{"ZADD", "z", "CH", "1", "a", "6", "b", "7", "d"},
	{"ZADD", "z", "XX", "1", "nope"},
	{"ZINCRBY", "z", "2", "a"},
	{"ZREM", "z", "a", "nope"},
	{"ZADD", "z", "10", "e", "11", "f", "12", "g"},
	{"ZPOPMIN", "z"},
	{"ZPOPMAX", "z", "2"},
	{"ZMPOP", "1", "z", "MIN", "COUNT", "1"},
	{"ZREMRANGEBYSCORE", "z", "0", "100"},
	{"ZADD", "z2", "1", "a", "2", "b", "3", "c"},
	{"ZREMRANGEBYRANK", "z2", "0", "1"},
	{"ZUNIONSTORE", "z3", "1", "z2"},
	{"ZRANGESTORE", "z4", "z2", "0", "-1"},
	{"ZRANGESTORE", "z4", "nokey", "0", "-1"},
	{"GEOADD", "geo", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"},
	{"GEOSEARCHSTORE", "geo2", "geo", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"},
	{"PFADD", "hll", "a", "b", "c"},
	{"PFADD", "hll", "a"},
	{"PFCOUNT", "hll"},
	{"PFMERGE", "hll2", "hll"},
	{"XADD", "x", "1-1", "f", "v"},
	{"XADD", "x", "2-1", "f", "v"},
	{"XADD", "x", "3-1", "f", "v"},
	{"XDEL", "x", "1-1", "9-9"},
	{"XTRIM", "x", "MAXLEN", "0"},
	{"XGROUP", "CREATE", "x", "g", "$"},
	{"XGROUP", "CREATECONSUMER", "x", "g", "c1"},
	{"XSETID", "x", "5-5"},
	{"RENAME", "h", "h2"},
	{"COPY", "h2", "h3"},
	{"MOVE", "h3", "1"},
	{"SORT", "l2", "ALPHA", "STORE", "sorted"},
	{"RPUSH", "nums", "3", "1", "2"},
	{"SORT", "nums", "STORE", "sorted"},
	{"SORT", "nokey", "STORE", "sorted"},
	{"EVAL", "redis.call('set','e1','1'); redis.call('sadd','e2','a','b'); return 1", "0"},
	{"MULTI"}, {"INCR", "t"}, {"RPUSH", "tl", "a", "b"}, {"EXEC"},
	{"SETNX", "s", "x"},
	{"SETNX", "fresh", "x"},
	{"SETEX", "se", "100", "v"},
	{"SET", "s", "v2", "GET"},
	{"DECR", "n2"},
	{"INCR", "s"},
	{"EXPIRE", "fresh", "-1"},
	{"RPOPLPUSH", "nums", "nums2"},
	{"RPOPLPUSH", "nokey", "nums2"},
	{"LPOP", "nokey"},
	{"ZADD", "zz", "1", "a", "2", "b"},
	{"ZINCRBY", "zz", "0", "a"},
	{"ZADD", "zz", "GT", "0", "a"},
	{"HINCRBY", "hh", "f", "0"},
	{"XADD", "xs", "1-1", "f", "v"},
	{"XGROUP", "CREATE", "xs", "grp", "0"},
	{"XGROUP", "DELCONSUMER", "xs", "grp", "alice"},
	{"XGROUP", "DESTROY", "xs", "grp"},
	{"XGROUP", "DESTROY", "xs", "grp"},
	{"XADD", "xq", "1-1", "a", "1"},
	{"XADD", "xq", "2-1", "a", "2"},
	{"XADD", "xq", "3-1", "a", "3"},
	{"XGROUP", "CREATE", "xq", "g1", "0"},
	{"XREADGROUP", "GROUP", "g1", "bob", "COUNT", "2", "STREAMS", "xq", ">"},
	{"XREADGROUP", "GROUP", "g1", "bob", "STREAMS", "xq", "0"},
	{"XREADGROUP", "GROUP", "g1", "bob", "NOACK", "STREAMS", "xq", ">"},
	{"XACK", "xq", "g1", "1-1", "9-9"},
	{"XCLAIM", "xq", "g1", "carol", "0", "2-1"},
	{"XCLAIM", "xq", "g1", "carol", "0", "2-1", "JUSTID"},
	{"XAUTOCLAIM", "xq", "g1", "dave", "0", "0"},
	{"XGROUP", "SETID", "xq", "g1", "0"},
	{"FUNCTION", "LOAD", "#!lua name=lib1\nredis.register_function('f1', function() return 1 end)"},
	{"FUNCTION", "DELETE", "lib1"},
	{"FLUSHDB"},
	{"SET", "k1", "v"},
	{"SET", "k2", "v"},
	{"FLUSHALL"},
	{"SWAPDB", "0", "1"},
}

// TestDirtyCountsMatchRedis runs dirtyScript against shoal and a live
// redis-server (both with no save points) and compares the change count
// (rdb_changes_since_last_save) each command adds.
func TestDirtyCountsMatchRedis(t *testing.T) {
	redisAddr := startRealRedis(t)
	s := startTestServer(t)
	ours, theirs := dialTest(t, s), dialTestAddr(t, redisAddr)
	prevOurs, prevTheirs := changesSinceSave(t, ours), changesSinceSave(t, theirs)
	inMulti := false
	for _, cmd := range dirtyScript {
		replyOurs, replyTheirs := ours.do(cmd...), theirs.do(cmd...)
		if replyOurs != replyTheirs && !strings.HasPrefix(cmd[0], "SPOP") {
			t.Errorf("%q: reply %q, Redis %q", cmd, replyOurs, replyTheirs)
		}
		switch cmd[0] {
		case "MULTI":
			inMulti = true
		case "EXEC":
			inMulti = false
		}
		if inMulti {
			continue // INFO would be queued; EXEC's total is compared
		}
		o, r := changesSinceSave(t, ours), changesSinceSave(t, theirs)
		if o-prevOurs != r-prevTheirs {
			t.Errorf("%q: shoal counted %d changes, Redis %d", cmd, o-prevOurs, r-prevTheirs)
		}
		prevOurs, prevTheirs = o, r
	}
}

// changesSinceSave reads rdb_changes_since_last_save.
func changesSinceSave(t *testing.T, tc *testConn) int64 {
	t.Helper()
	return infoInt(t, infoFields(t, tc, "persistence"), "rdb_changes_since_last_save")
}

// TestInfoPersistenceFieldsMatchRedis: INFO persistence has redis-server's
// fields in its order, and the values that do not depend on timing agree
// for the same history (a SAVE, then writes).
func TestInfoPersistenceFieldsMatchRedis(t *testing.T) {
	redisAddr := startRealRedis(t)
	s := startTestServer(t, "--dir", t.TempDir())
	ours, theirs := dialTest(t, s), dialTestAddr(t, redisAddr)
	for _, tc := range []*testConn{ours, theirs} {
		tc.doDisk("SAVE")
		tc.do("MSET", "a", "1", "b", "2")
	}
	names := func(tc *testConn) []string {
		var out []string
		for _, line := range strings.Split(bulkBody(t, tc.do("INFO", "persistence")), "\r\n") {
			if name, _, ok := strings.Cut(line, ":"); ok {
				out = append(out, name)
			}
		}
		return out
	}
	if o, r := names(ours), names(theirs); strings.Join(o, ",") != strings.Join(r, ",") {
		t.Fatalf("INFO persistence fields:\n shoal %v\n redis %v", o, r)
	}
	o, r := infoFields(t, ours, "persistence"), infoFields(t, theirs, "persistence")
	for _, f := range []string{"loading", "async_loading", "rdb_changes_since_last_save", "rdb_bgsave_in_progress",
		"rdb_last_bgsave_status", "rdb_last_bgsave_time_sec", "rdb_current_bgsave_time_sec", "rdb_saves",
		"aof_enabled", "aof_rewrite_in_progress", "aof_last_write_status"} {
		if o[f] != r[f] {
			t.Errorf("%s: shoal %q, redis %q", f, o[f], r[f])
		}
	}
}

// TestStopWritesOnBgsaveErrorMatchesRedis: after a failed background save
// (the data directory is gone) with save points configured, writes and
// PING are refused with -MISCONF until stop-writes-on-bgsave-error is
// turned off; reads go on. Same replies as redis-server.
func TestStopWritesOnBgsaveErrorMatchesRedis(t *testing.T) {
	dirOf := func() string {
		d := filepath.Join(t.TempDir(), "data")
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	redisDir, shoalDir := dirOf(), dirOf()
	redisAddr := startRealRedis(t, "--save", "3600 1", "--dir", redisDir)
	s := startTestServer(t, "--save", "3600 1", "--dir", shoalDir)
	ours, theirs := dialTest(t, s), dialTestAddr(t, redisAddr)
	for _, d := range []string{redisDir, shoalDir} {
		if err := os.Remove(d); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []*testConn{ours, theirs} {
		tc.do("SET", "k", "v")
		tc.do("BGSAVE")
		deadline := time.Now().Add(testIOTimeout)
		for {
			f := infoFields(t, tc, "persistence")
			if f["rdb_bgsave_in_progress"] == "0" && f["rdb_last_bgsave_status"] == "err" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the background save did not fail: %v", f)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, cmd := range [][]string{
		{"SET", "k", "w"}, {"PING"}, {"GET", "k"}, {"DEL", "k"},
		{"EVAL", "return redis.call('set','k','x')", "0"},
		{"EVAL", "#!lua\nreturn redis.call('set','k','x')", "0"},
		{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get','k')", "0"},
		{"MULTI"}, {"SET", "k", "y"}, {"EXEC"},
		{"CONFIG", "SET", "stop-writes-on-bgsave-error", "no"},
		{"SET", "k", "z"}, {"PING"},
	} {
		if o, r := ours.do(cmd...), theirs.do(cmd...); o != r {
			t.Errorf("%q: shoal %q, redis %q", cmd, o, r)
		}
	}
	// Without save points the servers' SIGTERM at cleanup does not try to
	// save into the missing directory (which would keep them running).
	ours.do("CONFIG", "SET", "save", "")
	theirs.do("CONFIG", "SET", "save", "")
}

// TestAOFWriteErrorMatchesRedis: once a write to the AOF fails (here the
// incr file a rewrite opens is a symlink to /dev/full: ENOSPC), writes and
// PING are refused with -MISCONF and strerror's words, reads go on, and
// turning the AOF off lets writes in again. Same replies as redis-server.
func TestAOFWriteErrorMatchesRedis(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	redisDir, shoalDir := t.TempDir(), t.TempDir()
	redisAddr := startRealRedis(t, "--appendonly", "yes", "--appendfsync", "everysec", "--dir", redisDir)
	s := startTestServer(t, "--appendonly", "yes", "--appendfsync", "everysec", "--dir", shoalDir)
	ours, theirs := dialTest(t, s), dialTestAddr(t, redisAddr)
	for _, tc := range []*testConn{ours, theirs} {
		waitInfo(t, tc, "aof_rewrite_in_progress", "0")
	}
	for _, d := range []string{redisDir, shoalDir} {
		// The next rewrite opens appendonly.aof.2.incr.aof for the writes
		// that follow it (the first one is .1, made at start-up).
		if err := os.Symlink("/dev/full", filepath.Join(d, "appendonlydir", "appendonly.aof.2.incr.aof")); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []*testConn{ours, theirs} {
		tc.do("SET", "k", "v")
		if got := tc.do("BGREWRITEAOF"); got != "+Background append only file rewriting started\r\n" {
			t.Fatalf("BGREWRITEAOF: %q", got)
		}
		waitInfo(t, tc, "aof_rewrite_in_progress", "0")
		tc.do("SET", "k", "v2")
		waitInfo(t, tc, "aof_last_write_status", "err")
	}
	for _, cmd := range [][]string{
		{"SET", "k", "w"}, {"PING"}, {"GET", "k"}, {"DEL", "k"},
		{"EVAL", "return redis.call('set','k','x')", "0"},
		{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get','k')", "0"},
		{"MULTI"}, {"SET", "k", "y"}, {"EXEC"},
		{"CONFIG", "SET", "appendonly", "no"},
		{"SET", "k", "z"}, {"PING"}, {"GET", "k"},
	} {
		if o, r := ours.do(cmd...), theirs.do(cmd...); o != r {
			t.Errorf("%q: shoal %q, redis %q", cmd, o, r)
		}
	}
}

// waitInfo waits until an INFO field has the value wanted.
func waitInfo(t *testing.T, tc *testConn, field, want string) {
	t.Helper()
	deadline := time.Now().Add(testIOTimeout)
	for {
		f := infoFields(t, tc)
		if f[field] == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("INFO %s of %s is %q, waited for %q", field, tc.c.RemoteAddr(), f[field], want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRDBCompressionMatchesRedis: rdbcompression decides whether long
// strings are LZF-compressed in DUMP payloads and RDB files; DUMP's bytes
// are the same as redis-server's at both values, and a file saved with
// rdbcompression no holds the value as it is.
func TestRDBCompressionMatchesRedis(t *testing.T) {
	redisAddr := startRealRedis(t)
	s := startTestServer(t)
	ours, theirs := dialTest(t, s), dialTestAddr(t, redisAddr)
	val := strings.Repeat("abcd", 100)
	for _, tc := range []*testConn{ours, theirs} {
		tc.do("SET", "s", val)
		tc.do("RPUSH", "l", val, "x")
		tc.do("HSET", "h", "f", val)
	}
	for _, v := range []string{"yes", "no"} {
		for _, tc := range []*testConn{ours, theirs} {
			tc.do("CONFIG", "SET", "rdbcompression", v)
		}
		for _, k := range []string{"s", "l", "h"} {
			if o, r := ours.do("DUMP", k), theirs.do("DUMP", k); o != r {
				t.Errorf("rdbcompression %s, DUMP %s: shoal %q, redis %q", v, k, o, r)
			}
		}
		if got := ours.doDisk("SAVE"); got != "+OK\r\n" {
			t.Fatalf("SAVE: %q", got)
		}
		file, err := os.ReadFile(filepath.Join(s.cfg.String("dir"), "dump.rdb"))
		if err != nil {
			t.Fatal(err)
		}
		if raw := bytes.Contains(file, []byte(val)); raw != (v == "no") {
			t.Errorf("rdbcompression %s: the file holds the value uncompressed: %v", v, raw)
		}
	}
}
