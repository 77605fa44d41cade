package node

import (
	"strconv"
	"testing"
	"time"
)

// Keys written with a TTL on a writable replica by its own clients expire
// there (Redis's slaveKeysWithExpire); keys from the master still wait for
// the master's DEL.
func TestWritableReplicaExpiresItsOwnKeys(t *testing.T) {
	ms, rs := startReplServer(t), startReplServer(t)
	m, r := dialTest(t, ms), dialTest(t, rs)
	m.do("DEBUG", "SET-ACTIVE-EXPIRE", "0") // the master will not DEL its key
	m.do("SET", "frommaster", "v", "PX", "50")
	replicaOf(t, r, ms)
	waitInSync(t, m, r)
	r.do("CONFIG", "SET", "replica-read-only", "no")
	before, _ := strconv.Atoi(infoField(t, r, "stats", "expired_keys"))
	if got := r.do("SET", "local", "v", "PX", "50"); got != "+OK\r\n" {
		t.Fatalf("SET on the writable replica = %q", got)
	}
	r.do("SET", "local2", "v")
	r.do("PEXPIRE", "local2", "50")
	r.do("SET", "later", "v", "EX", "1000")
	replWaitFor(t, 15*time.Second, "the replica's own keys expired by its cron", func() bool {
		n, _ := strconv.Atoi(infoField(t, r, "stats", "expired_keys"))
		return n == before+2
	})
	// INFO's count: the key that has not expired yet is still remembered.
	replWaitFor(t, 15*time.Second, "the expired keys forgotten", func() bool {
		return infoField(t, r, "stats", "slave_expires_tracked_keys") == "1"
	})
	r.do("DEL", "later")
	if got := r.do("DBSIZE"); got != ":1\r\n" {
		t.Fatalf("DBSIZE = %q: the master's key must stay until the master's DEL", got)
	}
	if got := r.do("EXISTS", "local", "local2", "frommaster"); got != ":0\r\n" {
		t.Fatalf("EXISTS = %q", got)
	}
}
