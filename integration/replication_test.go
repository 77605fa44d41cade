package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// Replication "must show" checks with real processes: a 3+3 cluster made by
// redis-cli --cluster create under a go-redis write load, with a replica
// whose link is killed (partial resync) and a replica restarted empty (full
// sync under writes), then every replica's DEBUG DIGEST equals its master's;
// WAIT's latency and timeout with a SIGSTOPped replica; a standalone replica
// behind a proxy cut for 5 s resumes with a partial resync.

// replInfo returns one field of a node's INFO replication / stats.
func replInfo(t testing.TB, addr, section, field string) string {
	t.Helper()
	text, err := Query(addr, "INFO", section)
	require.NoError(t, err)
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// waitReplicaCaughtUp waits until replica's link is up, its full sync done
// and its offset equals its master's.
func waitReplicaCaughtUp(t testing.TB, master, replica string, timeout time.Duration) {
	t.Helper()
	WaitFor(t, timeout, replica+" caught up with "+master, func() string {
		if s := replInfo(t, replica, "replication", "master_link_status"); s != "up" {
			return "link " + s
		}
		if s := replInfo(t, replica, "replication", "master_sync_in_progress"); s != "0" {
			return "sync in progress"
		}
		mo := replInfo(t, master, "replication", "master_repl_offset")
		ro := replInfo(t, replica, "replication", "slave_repl_offset")
		if mo != ro {
			return "offsets " + mo + " / " + ro
		}
		return ""
	})
}

// masterReplicaPairs maps each master's address to its replica's.
func masterReplicaPairs(t *testing.T, nodes []*ClusterNode) map[string]string {
	t.Helper()
	lines, err := ClusterNodes(nodes[0].Addr)
	require.NoError(t, err)
	byID := map[string]NodeLine{}
	for _, l := range lines {
		byID[l.ID] = l
	}
	addr := func(l NodeLine) string { return "127.0.0.1:" + strconv.Itoa(l.Port()) }
	pairs := map[string]string{}
	for _, l := range lines {
		if l.HasFlag("slave") {
			pairs[addr(byID[l.Master])] = addr(l)
		}
	}
	require.Len(t, pairs, 3, "%v", lines)
	return pairs
}

func nodeByAddr(nodes []*ClusterNode, addr string) *ClusterNode {
	for _, n := range nodes {
		if n.Addr == addr {
			return n
		}
	}
	return nil
}

// startReplicatedCluster starts a 3+3 cluster of nodes with extra
// directives, waits until every replica has caught up with its master, and
// returns the nodes, the master → replica address pairs and a go-redis
// cluster client (closed when the test ends).
func startReplicatedCluster(t *testing.T, extra ...string) ([]*ClusterNode, map[string]string, *redis.ClusterClient) {
	t.Helper()
	nodes := StartClusterNodes(t, 6, extra...)
	CreateCluster(t, nodes, 1, createTimeout)
	pairs := masterReplicaPairs(t, nodes)
	for m, r := range pairs {
		waitReplicaCaughtUp(t, m, r, 20*time.Second)
	}
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 16})
	t.Cleanup(func() { _ = cc.Close() })
	return nodes, pairs, cc
}

func TestReplicationClusterUnderLoad(t *testing.T) {
	nodes, pairs, cc := startReplicatedCluster(t, "--enable-debug-command", "yes", "--repl-backlog-size", "16mb")
	ctx := context.Background()
	require.NoError(t, cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }))

	// The write load: INCR / APPEND / LPUSH / SADD / HINCRBY / SET EX and
	// MULTI/EXEC on 5000 keys spread over every slot.
	const loadFor = 20 * time.Second
	stop := make(chan struct{})
	var ops, errs atomic.Int64
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := strconv.Itoa((n*7919 + w*104729) % 5000)
				var err error
				switch n % 7 {
				case 0:
					err = cc.Incr(ctx, "n:"+k).Err()
				case 1:
					err = cc.Append(ctx, "a:"+k, "x").Err()
				case 2:
					err = cc.LPush(ctx, "l:"+k, n).Err()
				case 3:
					err = cc.SAdd(ctx, "s:"+k, n%100).Err()
				case 4:
					err = cc.HIncrBy(ctx, "h:"+k, "f"+strconv.Itoa(n%10), 1).Err()
				case 5:
					err = cc.Set(ctx, "e:"+k, n, time.Hour).Err()
				case 6:
					// A transaction: the replica applies MULTI ... EXEC.
					_, err = cc.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Incr(ctx, "t:{"+k+"}a")
						p.RPush(ctx, "t:{"+k+"}b", n)
						return nil
					})
				}
				if err != nil {
					errs.Add(1)
					continue
				}
				ops.Add(1)
			}
		}()
	}
	loadStart := time.Now()

	// Pick two shards: on one the replica's master link is killed; on the
	// other the replica is restarted empty.
	var masters []string
	for m := range pairs {
		masters = append(masters, m)
	}
	cutMaster, restartMaster := masters[0], masters[1]
	cutReplica, restartReplica := pairs[cutMaster], pairs[restartMaster]

	time.Sleep(4 * time.Second)
	partialBefore, _ := strconv.Atoi(replInfo(t, cutMaster, "stats", "sync_partial_ok"))
	fullBefore, _ := strconv.Atoi(replInfo(t, cutMaster, "stats", "sync_full"))
	out, err := Query(cutReplica, "CLIENT", "KILL", "TYPE", "master")
	require.NoError(t, err)
	require.Equal(t, "1", out)

	time.Sleep(2 * time.Second)
	restartFullBefore, _ := strconv.Atoi(replInfo(t, restartMaster, "stats", "sync_full"))
	rn := nodeByAddr(nodes, restartReplica)
	require.NotNil(t, rn)
	rn.Kill()
	rn.Restart() // killed before any save point fired: it comes back empty, as a replica (nodes.conf)

	time.Sleep(max(0, loadFor-time.Since(loadStart)))
	close(stop)
	wg.Wait()
	t.Logf("load: %d writes in %v (%d errors during restarts)", ops.Load(), time.Since(loadStart).Round(time.Millisecond), errs.Load())
	require.Greater(t, ops.Load(), int64(1000))

	for m, r := range pairs {
		waitReplicaCaughtUp(t, m, r, 30*time.Second)
		md, err := Query(m, "DEBUG", "DIGEST")
		require.NoError(t, err)
		rd, err := Query(r, "DEBUG", "DIGEST")
		require.NoError(t, err)
		require.Equal(t, md, rd, "DEBUG DIGEST of master %s and replica %s", m, r)
		require.NotEqual(t, strings.Repeat("0", 40), md)
	}
	partialAfter, _ := strconv.Atoi(replInfo(t, cutMaster, "stats", "sync_partial_ok"))
	fullAfter, _ := strconv.Atoi(replInfo(t, cutMaster, "stats", "sync_full"))
	require.Greater(t, partialAfter, partialBefore, "the killed link continued with a partial resync")
	require.Equal(t, fullBefore, fullAfter, "no full sync after the killed link")
	restartFullAfter, _ := strconv.Atoi(replInfo(t, restartMaster, "stats", "sync_full"))
	require.Greater(t, restartFullAfter, restartFullBefore, "the restarted replica did a full sync")

	// CLUSTER SLOTS lists every replica (their links are up).
	for _, n := range nodes {
		slotsReply, err := cc.ClusterSlots(ctx).Result()
		require.NoError(t, err)
		for _, s := range slotsReply {
			require.Len(t, s.Nodes, 2, "slots %d-%d via %s", s.Start, s.End, n.Addr)
		}
	}

	// WAIT 1 on loopback: answered within milliseconds.
	wm := redis.NewClient(&redis.Options{Addr: cutMaster})
	defer wm.Close()
	owned := keyOnNode(t, ctx, cc, cutMaster)
	require.NoError(t, wm.Set(ctx, owned, "1", 0).Err())
	start := time.Now()
	n, err := wm.Wait(ctx, 1, 2*time.Second).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	took := time.Since(start)
	t.Logf("WAIT 1 answered in %v", took)
	require.Less(t, took, 100*time.Millisecond)

	// SIGSTOP the replica: WAIT times out with 0.
	stopped := nodeByAddr(nodes, pairs[cutMaster])
	require.NoError(t, syscall.Kill(stopped.PID(), syscall.SIGSTOP))
	defer func() { _ = syscall.Kill(stopped.PID(), syscall.SIGCONT) }()
	// The signal is asynchronous: wait until every thread is stopped.
	WaitFor(t, 5*time.Second, "the replica to stop", func() string {
		if st := procState(stopped.PID()); st != "T" {
			return "state " + st
		}
		return ""
	})
	require.NoError(t, wm.Set(ctx, owned, "2", 0).Err())
	start = time.Now()
	n, err = wm.Wait(ctx, 1, 300*time.Millisecond).Result()
	require.NoError(t, err)
	require.Equal(t, int64(0), n)
	require.GreaterOrEqual(t, time.Since(start), 290*time.Millisecond)
	require.NoError(t, syscall.Kill(stopped.PID(), syscall.SIGCONT))
	waitReplicaCaughtUp(t, cutMaster, pairs[cutMaster], 10*time.Second)
}

// keyOnNode returns a key whose slot the master at addr serves.
func keyOnNode(t *testing.T, ctx context.Context, cc *redis.ClusterClient, addr string) string {
	t.Helper()
	slotsReply, err := cc.ClusterSlots(ctx).Result()
	require.NoError(t, err)
	for i := range 100000 {
		k := "wait:" + strconv.Itoa(i)
		slot, err := cc.ClusterKeySlot(ctx, k).Result()
		require.NoError(t, err)
		for _, s := range slotsReply {
			if int64(s.Start) <= slot && slot <= int64(s.End) && s.Nodes[0].Addr == addr {
				return k
			}
		}
	}
	t.Fatalf("no key for %s", addr)
	return ""
}

// cuttableProxy forwards TCP connections to target until cut: then it
// closes every connection and refuses new ones until restored.
type cuttableProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *cuttableProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cuttableProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *cuttableProxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		up, err := net.DialTimeout("tcp", p.target, 2*time.Second)
		if err != nil {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(pair[1], pair[0])
				_ = pair[1].Close()
				_ = pair[0].Close()
			}()
		}
	}
}

func (p *cuttableProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.conns = nil
	}
}

func (p *cuttableProxy) port() string {
	return strconv.Itoa(p.ln.Addr().(*net.TCPAddr).Port)
}

// TestReplicationPartialResyncAfterCut: the replica reaches its master
// through a proxy; the proxy cuts the link for 5 s while writes continue;
// the replica resumes with +CONTINUE and converges.
func TestReplicationPartialResyncAfterCut(t *testing.T) {
	master := StartServer(t, "--enable-debug-command", "yes", "--repl-backlog-size", "64mb")
	replica := StartServer(t, "--enable-debug-command", "yes")
	proxy := startProxy(t, master.Addr)
	out, err := Query(replica.Addr, "REPLICAOF", "127.0.0.1", proxy.port())
	require.NoError(t, err)
	require.Equal(t, "OK", out)
	ctx := context.Background()
	mc := redis.NewClient(&redis.Options{Addr: master.Addr})
	defer mc.Close()
	for i := range 1000 {
		require.NoError(t, mc.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err())
	}
	waitReplicaCaughtUp(t, master.Addr, replica.Addr, 10*time.Second)

	proxy.setCut(true)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := mc.Incr(ctx, "c"+strconv.Itoa(n%100)).Err(); err != nil && !errors.Is(err, redis.ErrClosed) {
				t.Errorf("INCR: %v", err)
				return
			}
		}
	}()
	WaitFor(t, 5*time.Second, "the replica to see its link down", func() string {
		if s := replInfo(t, replica.Addr, "replication", "master_link_status"); s != "down" {
			return s
		}
		return ""
	})
	time.Sleep(5 * time.Second)
	proxy.setCut(false)
	close(stop)
	wg.Wait()
	waitReplicaCaughtUp(t, master.Addr, replica.Addr, 15*time.Second)
	require.Equal(t, "1", replInfo(t, master.Addr, "stats", "sync_full"))
	require.Equal(t, "1", replInfo(t, master.Addr, "stats", "sync_partial_ok"))
	md, err := Query(master.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	rd, err := Query(replica.Addr, "DEBUG", "DIGEST")
	require.NoError(t, err)
	require.Equal(t, md, rd)
}

// procState is "T" when every thread of a process is stopped, else the
// state of one that is not (/proc/pid/task/*/stat).
func procState(pid int) string {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	for _, task := range tasks {
		b, err := os.ReadFile(dir + "/" + task.Name() + "/stat")
		if err != nil {
			return err.Error()
		}
		// pid (comm) state ...: comm may hold spaces; the state follows ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 || i+2 >= len(b) {
			return "?"
		}
		if st := string(b[i+2]); st != "T" {
			return st
		}
	}
	return "T"
}

// A replica that cannot persist (here its BGSAVE failed: its dir is gone,
// with save points and stop-writes-on-bgsave-error) stops at the next
// write its master sends, as Redis's replica panics, rather than serve
// data its files do not hold; with replica-ignore-disk-write-errors yes it
// applies the write and says so.
func TestReplicaDiskWriteError(t *testing.T) {
	for _, ignore := range []string{"no", "yes"} {
		t.Run("ignore="+ignore, func(t *testing.T) {
			m := StartServer(t, "--save", "")
			r := StartServer(t, "--save", "3600 1", "--replica-ignore-disk-write-errors", ignore,
				"--enable-protected-configs", "yes")
			out, err := Query(r.Addr, "REPLICAOF", "127.0.0.1", strconv.Itoa(m.Port))
			require.NoError(t, err)
			require.Equal(t, "OK", out)
			waitReplicaCaughtUp(t, m.Addr, r.Addr, 20*time.Second)
			gone := filepath.Join(r.Dir, "gone")
			require.NoError(t, os.Mkdir(gone, 0o755))
			out, err = Query(r.Addr, "CONFIG", "SET", "dir", gone)
			require.NoError(t, err)
			require.Equal(t, "OK", out)
			require.NoError(t, os.Remove(gone))
			_, err = Query(r.Addr, "BGSAVE")
			require.NoError(t, err)
			WaitFor(t, 10*time.Second, "the replica's BGSAVE to fail", func() string {
				if st := replInfo(t, r.Addr, "persistence", "rdb_last_bgsave_status"); st != "err" {
					return st
				}
				return ""
			})
			_, err = Query(m.Addr, "SET", "k", "v")
			require.NoError(t, err)
			if ignore == "no" {
				WaitFor(t, 10*time.Second, "the replica to stop", func() string {
					if r.Running() {
						return "running"
					}
					return ""
				})
				require.Contains(t, r.Log(), "Replica was unable to write command to disk.")
				return
			}
			WaitFor(t, 10*time.Second, "the write on the replica", func() string {
				v, err := Query(r.Addr, "GET", "k")
				if err != nil || v != "v" {
					return fmt.Sprintf("%q %v", v, err)
				}
				return ""
			})
			require.True(t, r.Running())
			require.Contains(t, r.Log(), "Replica is applying a command even though it is unable to write to disk.")
			_, err = Query(r.Addr, "CONFIG", "SET", "save", "") // its SIGTERM at cleanup must not save into nowhere
			require.NoError(t, err)
		})
	}
}
