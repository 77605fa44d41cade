// Command benchmigrate measures moving slots between two masters of a
// 3-master cluster on 127.0.0.1: `redis-cli --cluster reshard` between
// redis-server nodes, the same between shoal-server nodes, and shoal's
// atomic slot migration (CLUSTER MIGRATESLOTS). The slots hold -keys small
// strings plus one hash of -hash fields; a go-redis ClusterClient writes to
// the moving slots throughout, and the report gives the move's duration and
// the p50/p99/max latency of the writes made during it. Every acknowledged
// write is read back afterwards.
//
// scripts/bench-migrate.sh runs it (make bench).
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/shoal-db/shoal/slots"
)

var (
	redisBin = flag.String("redis", "/usr/bin/redis-server", "redis-server binary")
	shoalBin = flag.String("shoal", "bin/shoal-server", "shoal-server binary")
	cliBin   = flag.String("cli", "/usr/bin/redis-cli", "redis-cli binary")
	numKeys  = flag.Int("keys", 1_000_000, "string keys in the moving slots")
	hashLen  = flag.Int("hash", 1_000_000, "fields of the one big hash in the moving slots")
	numSlots = flag.Int("slots", 1000, "slots to move (0..slots-1)")
	modes    = flag.String("modes", "redis-reshard,shoal-reshard,shoal-atomic", "what to measure")
	pipeline = flag.Int("cluster-pipeline", 10, "redis-cli --cluster-pipeline (keys per MIGRATE)")
	out      = flag.String("out", "", "also write the report (markdown) to this file")
	timeout  = flag.Duration("timeout", 30*time.Minute, "bound on one move")
	keep     = flag.Bool("keep", false, "keep the nodes' directories (logs) under $TMPDIR")
)

// The nodes run with cluster-node-timeout 60 s: a redis-server blocked for
// seconds migrating the big hash (its MIGRATE and the target's RESTORE
// block their event loops) is otherwise failed by its peers, and the
// reshard dies with CLUSTERDOWN.

type proc struct {
	cmd  *exec.Cmd
	addr string
	dir  string
}

// freePortPair returns a free port p whose default cluster bus port
// p+10000 is free too.
func freePortPair() (int, error) {
	for range 100 {
		p, err := testharness.FreePort()
		if err != nil {
			return 0, err
		}
		if p+10000 > 65535 {
			continue
		}
		if l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000)); err == nil {
			_ = l2.Close()
			return p, nil
		}
	}
	return 0, errors.New("no free port pair")
}

func start(bin, dir string) (*proc, error) {
	port, err := freePortPair()
	if err != nil {
		return nil, err
	}
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "60000", "--save", "",
		"--appendonly", "no", "--dir", dir, "--protected-mode", "no"}
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c := redis.NewClient(&redis.Options{Addr: p.addr})
		err := c.Ping(context.Background()).Err()
		_ = c.Close()
		if err == nil {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("%s on %s did not start: %v", bin, p.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *proc) stop() {
	_ = p.cmd.Process.Kill()
	_, _ = p.cmd.Process.Wait()
}

func runCLI(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, *cliBin, args...)
	cmd.Stdin = strings.NewReader(strings.Repeat("yes\n", 16))
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// tags returns one hash tag per slot 0..n-1.
func tags(n int) []string {
	out := make([]string, n)
	found := 0
	for i := 0; found < n; i++ {
		t := "t" + strconv.Itoa(i)
		if s := int(slots.KeySlot([]byte(t))); s < n && out[s] == "" {
			out[s] = t
			found++
		}
	}
	return out
}

// load fills the moving slots on addr with pipelined raw commands.
func load(addr string, tg []string) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	w := bufio.NewWriterSize(conn, 1<<20)
	r := bufio.NewReaderSize(conn, 1<<20)
	pending := 0
	drain := func() error {
		if err := w.Flush(); err != nil {
			return err
		}
		for ; pending > 0; pending-- {
			line, err := r.ReadString('\n')
			if err != nil {
				return err
			}
			if strings.HasPrefix(line, "-") {
				return errors.New(strings.TrimSpace(line))
			}
		}
		return nil
	}
	send := func(args ...string) error {
		fmt.Fprintf(w, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(w, "$%d\r\n%s\r\n", len(a), a)
		}
		pending++
		if pending >= 2000 {
			return drain()
		}
		return nil
	}
	perSlot := (*numKeys + len(tg) - 1) / len(tg)
	n := 0
	for s := 0; s < len(tg) && n < *numKeys; s++ {
		for i := 0; i < perSlot && n < *numKeys; i++ {
			if err := send("SET", "{"+tg[s]+"}:"+strconv.Itoa(i), "value-"+strconv.Itoa(n)); err != nil {
				return err
			}
			n++
		}
	}
	bigKey := "{" + tg[len(tg)/2] + "}:bighash"
	for i := 0; i < *hashLen; i += 500 {
		args := []string{"HSET", bigKey}
		for j := i; j < min(i+500, *hashLen); j++ {
			args = append(args, "f"+strconv.Itoa(j), "v"+strconv.Itoa(j))
		}
		if err := send(args...); err != nil {
			return err
		}
	}
	return drain()
}

type result struct {
	mode           string
	seconds        float64
	writes, failed int64
	during         int
	p50, p99, max  time.Duration
	lost           int
	keysAfter      int64
}

func latencyStats(l []time.Duration) (p50, p99, mx time.Duration) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	return l[len(l)/2], l[len(l)*99/100], l[len(l)-1]
}

func runMode(mode string, tg []string) (*result, error) {
	bin := *shoalBin
	if strings.HasPrefix(mode, "redis") {
		bin = *redisBin
	}
	base, err := os.MkdirTemp("", "bench-migrate-")
	if err != nil {
		return nil, err
	}
	if !*keep {
		defer os.RemoveAll(base)
	} else {
		fmt.Fprintf(os.Stderr, "%s: node directories in %s\n", mode, base)
	}
	var nodes []*proc
	defer func() {
		for _, p := range nodes {
			p.stop()
		}
	}()
	for i := range 3 {
		dir := filepath.Join(base, strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		p, err := start(bin, dir)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, p)
	}
	args := []string{"--cluster", "create"}
	for _, p := range nodes {
		args = append(args, p.addr)
	}
	if o, err := runCLI(append(args, "--cluster-replicas", "0", "--cluster-yes")...); err != nil {
		return nil, fmt.Errorf("cluster create: %v\n%s", err, o)
	}
	ctx := context.Background()
	ids := make([]string, 3)
	for i, p := range nodes {
		c := redis.NewClient(&redis.Options{Addr: p.addr})
		ids[i] = c.Do(ctx, "CLUSTER", "MYID").Val().(string)
		_ = c.Close()
	}
	// Wait for the cluster to agree (create returns once joined).
	for deadline := time.Now().Add(60 * time.Second); ; {
		o, err := runCLI("--cluster", "check", nodes[0].addr)
		if err == nil && clusterOK(nodes) {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("cluster not settled:\n%s", o)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t0 := time.Now()
	if err := load(nodes[0].addr, tg); err != nil {
		return nil, fmt.Errorf("loading: %w", err)
	}
	fmt.Fprintf(os.Stderr, "%s: loaded %d keys + a %d-field hash in %v\n", mode, *numKeys, *hashLen, time.Since(t0).Round(time.Millisecond))

	// The write load: SETs to fresh keys of the moving slots.
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{nodes[0].addr}, MaxRedirects: 64,
		ReadTimeout: 60 * time.Second, WriteTimeout: 60 * time.Second})
	defer cc.Close()
	var (
		mu       sync.Mutex
		lat      []time.Duration
		acked    = map[string]string{}
		writes   atomic.Int64
		failed   atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		measure  atomic.Bool
		loadErrs atomic.Pointer[string]
	)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := "{" + tg[(i*7+g)%len(tg)] + "}:w" + strconv.Itoa(g) + ":" + strconv.Itoa(i)
				v := strconv.Itoa(i)
				st := time.Now()
				err := cc.Set(ctx, k, v, 0).Err()
				d := time.Since(st)
				if err != nil {
					failed.Add(1)
					e := err.Error()
					loadErrs.Store(&e)
					time.Sleep(10 * time.Millisecond)
					continue
				}
				writes.Add(1)
				mu.Lock()
				acked[k] = v
				if measure.Load() {
					lat = append(lat, d)
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(time.Second)
	measure.Store(true)
	moveStart := time.Now()
	switch mode {
	case "redis-reshard", "shoal-reshard":
		o, err := runCLI("--cluster", "reshard", nodes[0].addr, "--cluster-from", ids[0], "--cluster-to", ids[1],
			"--cluster-slots", strconv.Itoa(*numSlots), "--cluster-yes", "--cluster-pipeline", strconv.Itoa(*pipeline))
		if err != nil {
			return nil, fmt.Errorf("reshard: %v\n%s", err, tail(o, 30))
		}
	case "shoal-atomic":
		c := redis.NewClient(&redis.Options{Addr: nodes[0].addr})
		defer c.Close()
		if err := c.Do(ctx, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", "0", strconv.Itoa(*numSlots-1), "NODE", ids[1]).Err(); err != nil {
			return nil, err
		}
		for deadline := time.Now().Add(*timeout); ; {
			v, err := c.Do(ctx, "CLUSTER", "GETSLOTMIGRATIONS").Slice()
			if err != nil {
				return nil, err
			}
			state := ""
			if len(v) > 0 {
				switch e := v[len(v)-1].(type) {
				case []any: // RESP2
					for i := 0; i+1 < len(e); i += 2 {
						if e[i] == "state" {
							state = fmt.Sprint(e[i+1])
						}
					}
				case map[any]any: // RESP3
					state = fmt.Sprint(e["state"])
				}
			}
			if state == "success" {
				break
			}
			if state == "failed" || state == "cancelled" || time.Now().After(deadline) {
				return nil, fmt.Errorf("atomic migration ended %q: %v", state, v)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	secs := time.Since(moveStart).Seconds()
	measure.Store(false)
	time.Sleep(500 * time.Millisecond)
	close(stop)
	wg.Wait()

	r := &result{mode: mode, seconds: secs, writes: writes.Load(), failed: failed.Load()}
	mu.Lock()
	r.during = len(lat)
	r.p50, r.p99, r.max = latencyStats(lat)
	mu.Unlock()
	for k, v := range acked {
		if got, err := cc.Get(ctx, k).Result(); err != nil || got != v {
			r.lost++
		}
	}
	c1 := redis.NewClient(&redis.Options{Addr: nodes[1].addr})
	defer c1.Close()
	for s := 0; s < *numSlots; s++ {
		r.keysAfter += c1.ClusterCountKeysInSlot(ctx, s).Val()
	}
	if p := loadErrs.Load(); p != nil {
		fmt.Fprintf(os.Stderr, "%s: %d writes failed, last: %s\n", mode, r.failed, *p)
	}
	return r, nil
}

// clusterOK reports whether every node says cluster_state:ok.
func clusterOK(nodes []*proc) bool {
	for _, p := range nodes {
		c := redis.NewClient(&redis.Options{Addr: p.addr})
		info, err := c.ClusterInfo(context.Background()).Result()
		_ = c.Close()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
	}
	return true
}

func tail(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

func main() {
	flag.Parse()
	tg := tags(*numSlots)
	var results []*result
	for _, m := range strings.Split(*modes, ",") {
		fmt.Fprintf(os.Stderr, "== %s\n", m)
		r, err := runMode(m, tg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", m, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "%s: %.1f s, write p99 %v\n", m, r.seconds, r.p99)
		results = append(results, r)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Moving %d slots (%d keys + one %d-field hash), 3-master cluster on 127.0.0.1\n\n", *numSlots, *numKeys, *hashLen)
	fmt.Fprintf(&b, "redis-cli --cluster reshard with --cluster-pipeline %d; a go-redis ClusterClient writes to the moving slots throughout (4 writers).\n\n", *pipeline)
	b.WriteString("| mode | move (s) | writes during | write p50 | write p99 | write max | failed writes | lost writes | keys on target |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %.2f | %d | %v | %v | %v | %d | %d | %d |\n", r.mode, r.seconds, r.during, r.p50.Round(time.Microsecond),
			r.p99.Round(time.Microsecond), r.max.Round(time.Microsecond), r.failed, r.lost, r.keysAfter)
	}
	if len(results) == 3 && results[2].seconds > 0 {
		fmt.Fprintf(&b, "\natomic migration vs redis-cli on Redis: %.1fx faster; vs redis-cli on shoal: %.1fx faster\n",
			results[0].seconds/results[2].seconds, results[1].seconds/results[2].seconds)
	}
	fmt.Print(b.String())
	if *out != "" {
		if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
