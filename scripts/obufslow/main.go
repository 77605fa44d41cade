// Command obufslow runs the slow-readers scenario of client-output-buffer-limit
// against redis-server and shoal-server in the same run, one server at a time,
// and prints for each: how many slow readers were disconnected (and when), the
// server's RSS (before, peak), and the latency of a concurrent PING/GET client.
//
// Each slow reader asks for a 1 MB value many times and reads its replies
// slowly (16 KB every 10 ms). Two ways to ask:
//
//	batch: all GETs in one write (a pipeline; the server gets them in one read)
//	drip:  one GET every 50 ms, whatever the reader has read
//
//	go run ./scripts/obufslow -shoal bin/shoal-server -redis /usr/bin/redis-server
//	go run ./scripts/obufslow -mode drip -limit "normal 8mb 4mb 5"
//
// Only the servers it starts are signalled (by their process), on 127.0.0.1.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
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

	"github.com/shoal-db/shoal/internal/testharness"
)

type options struct {
	readers   int
	valueSize int
	gets      int
	limit     string
	mode      string
	duration  time.Duration
}

// result is one server's run.
type result struct {
	name                string
	disconnected        int
	lastDisconnect      time.Duration // after the readers started
	rssBefore, rssPeak  int64         // bytes
	probeOps            int
	p50, p99, pmax      time.Duration
	logLines            int // "overcoming of output buffer limits" lines in the server's log
	readerBytes         int64
	probeErrors         int
	serverDiedOrTimeout string
}

func main() {
	shoal := flag.String("shoal", "bin/shoal-server", "shoal-server binary")
	redis := flag.String("redis", "/usr/bin/redis-server", "redis-server binary")
	before := flag.String("before", "", "optional: another shoal-server binary (e.g. built before a change), run as shoal-before")
	var o options
	flag.IntVar(&o.readers, "readers", 10, "slow readers")
	flag.IntVar(&o.valueSize, "value", 1<<20, "value size in bytes")
	flag.IntVar(&o.gets, "gets", 32, "GETs of the value each reader sends")
	flag.StringVar(&o.limit, "limit", "normal 8mb 4mb 5", "client-output-buffer-limit")
	flag.StringVar(&o.mode, "mode", "batch", "batch | drip")
	flag.DurationVar(&o.duration, "duration", 12*time.Second, "how long each server is observed")
	rounds := flag.Int("rounds", 1, "rounds (each runs both servers, alternating which goes first)")
	flag.Parse()
	if o.readers < 1 || o.readers > 200 || o.gets < 1 || o.gets > 1000 || o.valueSize < 1 || o.valueSize > 64<<20 ||
		o.duration <= 0 || o.duration > 5*time.Minute || *rounds < 1 || *rounds > 10 || (o.mode != "batch" && o.mode != "drip") {
		fmt.Fprintln(os.Stderr, "obufslow: readers 1..200, gets 1..1000, value up to 64 MB, duration up to 5m, rounds 1..10, mode batch|drip")
		os.Exit(2)
	}
	servers := [][2]string{{"redis-server", *redis}, {"shoal-server", *shoal}}
	if *before != "" {
		servers = append(servers, [2]string{"shoal-before", *before})
	}
	var all []result
	for r := 0; r < *rounds; r++ {
		order := slices.Clone(servers)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, sv := range order {
			res, err := runOne(sv[0], sv[1], o)
			if err != nil {
				fmt.Fprintf(os.Stderr, "obufslow: %s: %v\n", sv[0], err)
				os.Exit(1)
			}
			all = append(all, res)
		}
	}
	fmt.Printf("\nslow readers: %d × %d GETs of a %d-byte value (%s), reading 16 KB / 10 ms; client-output-buffer-limit %q; %v per server\n",
		o.readers, o.gets, o.valueSize, o.mode, o.limit, o.duration)
	fmt.Printf("%-13s %12s %14s %10s %10s %9s %9s %9s %9s %8s %10s\n",
		"server", "disconnected", "last at", "RSS before", "RSS peak", "probe ops", "p50", "p99", "max", "log lines", "read MB")
	for _, r := range all {
		last := "-"
		if r.disconnected > 0 {
			last = r.lastDisconnect.Round(time.Millisecond).String()
		}
		fmt.Printf("%-13s %9d/%-2d %14s %9.1fM %9.1fM %9d %9s %9s %9s %8d %10.1f %s\n",
			r.name, r.disconnected, o.readers, last, mb(r.rssBefore), mb(r.rssPeak), r.probeOps,
			r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.pmax.Round(time.Microsecond),
			r.logLines, mb(r.readerBytes), r.serverDiedOrTimeout)
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// runOne starts one server, runs the scenario, stops the server.
func runOne(name, bin string, o options) (result, error) {
	res := result{name: name}
	dir, err := os.MkdirTemp("", "obufslow-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	port, err := testharness.FreePort()
	if err != nil {
		return res, err
	}
	logPath := filepath.Join(dir, "server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return res, err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--logfile", "",
		"--client-output-buffer-limit", o.limit)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return res, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	admin, err := dialReady(addr, exited)
	if err != nil {
		return res, err
	}
	defer admin.Close()
	if r, err := admin.do("SET", "big", strings.Repeat("v", o.valueSize)); err != nil || r != "+OK\r\n" {
		return res, fmt.Errorf("SET big: %q %v", r, err)
	}
	if r, err := admin.do("SET", "small", "x"); err != nil || r != "+OK\r\n" {
		return res, fmt.Errorf("SET small: %q %v", r, err)
	}
	time.Sleep(300 * time.Millisecond) // let start-up allocations settle
	pid := cmd.Process.Pid
	res.rssBefore = rss(pid)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var peak atomic.Int64
	peak.Store(res.rssBefore)
	wg.Add(1)
	go func() { // RSS sampler
		defer wg.Done()
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if v := rss(pid); v > peak.Load() {
					peak.Store(v)
				}
			}
		}
	}()
	var lats []time.Duration
	var probeErrs int
	wg.Add(1)
	go func() { // the other client: PING and GET small, one at a time
		defer wg.Done()
		pc, err := dial(addr)
		if err != nil {
			probeErrs++
			return
		}
		defer pc.Close()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			t0 := time.Now()
			var r string
			if i%2 == 0 {
				r, err = pc.do("PING")
			} else {
				r, err = pc.do("GET", "small")
			}
			if err != nil || (r != "+PONG\r\n" && r != "$1\r\nx\r\n") {
				probeErrs++
				return
			}
			lats = append(lats, time.Since(t0))
			time.Sleep(time.Millisecond)
		}
	}()
	start := time.Now()
	var disc atomic.Int64
	var lastDisc atomic.Int64
	var readBytes atomic.Int64
	var rwg sync.WaitGroup
	for i := 0; i < o.readers; i++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			n, closed := slowReader(addr, o, stop)
			readBytes.Add(n)
			if closed {
				disc.Add(1)
				d := int64(time.Since(start))
				for {
					cur := lastDisc.Load()
					if d <= cur || lastDisc.CompareAndSwap(cur, d) {
						break
					}
				}
			}
		}()
	}
	select {
	case <-time.After(o.duration):
	case <-exited:
		res.serverDiedOrTimeout = "(server exited)"
	}
	close(stop)
	rwg.Wait()
	wg.Wait()
	res.disconnected = int(disc.Load())
	res.lastDisconnect = time.Duration(lastDisc.Load())
	res.rssPeak = peak.Load()
	res.readerBytes = readBytes.Load()
	res.probeErrors = probeErrs
	if probeErrs > 0 {
		res.serverDiedOrTimeout += " (probe failed)"
	}
	res.probeOps = len(lats)
	if len(lats) > 0 {
		slices.Sort(lats)
		res.p50 = lats[len(lats)/2]
		res.p99 = lats[len(lats)*99/100]
		res.pmax = lats[len(lats)-1]
	}
	if b, err := os.ReadFile(logPath); err == nil {
		res.logLines = bytes.Count(b, []byte("for overcoming of output buffer limits"))
	}
	return res, nil
}

// slowReader asks for the value o.gets times and reads 16 KB every 10 ms
// until the server closes the connection (closed) or stop.
func slowReader(addr string, o options, stop <-chan struct{}) (read int64, closed bool) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, false
	}
	defer c.Close()
	get := encode("GET", "big")
	done := make(chan struct{})
	defer close(done)
	switch o.mode {
	case "batch":
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(bytes.Repeat(get, o.gets)); err != nil {
			return 0, true
		}
	case "drip":
		go func() {
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for i := 0; i < o.gets; i++ {
				select {
				case <-done:
					return
				case <-stop:
					return
				case <-t.C:
				}
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := c.Write(get); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					return
				}
			}
		}()
	}
	buf := make([]byte, 16<<10)
	for {
		select {
		case <-stop:
			return read, false
		default:
		}
		_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := io.ReadAtLeast(c, buf, 1)
		read += int64(n)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return read, true // EOF or reset: the server closed it
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rss is the process's resident set size (VmRSS), 0 if unknown.
func rss(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

type respConn struct {
	net.Conn
	r *bufio.Reader
}

func dial(addr string) (*respConn, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	return &respConn{Conn: c, r: bufio.NewReader(c)}, nil
}

// dialReady waits (up to 10 s) until the server answers PING.
func dialReady(addr string, exited <-chan struct{}) (*respConn, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, err := dial(addr); err == nil {
			if r, err := c.do("PING"); err == nil && r == "+PONG\r\n" {
				return c, nil
			}
			c.Close()
		}
		select {
		case <-exited:
			return nil, errors.New("server exited during start-up")
		default:
		}
		if time.Now().After(deadline) {
			return nil, errors.New("server not ready within 10 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func encode(args ...string) []byte {
	b := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b = append(b, "$"+strconv.Itoa(len(a))+"\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// do sends one command and returns its reply (simple strings, errors,
// integers and bulk strings only).
func (c *respConn) do(args ...string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(encode(args...)); err != nil {
		return "", err
	}
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if line[0] != '$' {
		return line, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 0 {
		return line, err
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, body); err != nil {
		return "", err
	}
	return line + string(body), nil
}
