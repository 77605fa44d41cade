// Command benchtrack measures GET with client-side caching's server half
// on: each connection says HELLO 3 and CLIENT TRACKING on, then sends GETs
// of random keys in pipelines of -pipeline, so the server remembers every
// key each client read; -writers connections SET random keys meanwhile, so
// the server sends invalidation pushes to the readers, which read them
// between replies. With -write-every N the writers SET once per N GETs the
// readers completed, so every server gets the same writes for the same
// reads (unpaced, how many SETs a writer gets in beside 50 pipelined
// readers is up to each server's scheduling, and so are the pushes).
// scripts/bench-tracking.sh runs it against redis-server and shoal-server
// side by side.
//
//	go run ./scripts/benchtrack -addr 127.0.0.1:6379 -clients 50 -requests 1000000
//
// It prints one line: "<GET requests per second> <invalidation pushes read>
// <SETs the writers did>". Paced writers finish the SETs they are owed
// after the readers are done (a server that serves a writer's round trip
// once per pass over the readers lags behind), so every server does them
// all; the rate counts the readers' time only.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/resp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:6379", "server address")
	clients := flag.Int("clients", 50, "reading connections, each with tracking on")
	writers := flag.Int("writers", 0, "connections writing random keys meanwhile")
	requests := flag.Int("requests", 1_000_000, "GETs in all")
	pipeline := flag.Int("pipeline", 16, "GETs per round trip")
	keys := flag.Int("keys", 10_000, "key space (filled first with 32-byte values)")
	writeEvery := flag.Int("write-every", 0, "GETs per writer SET (0: writers SET as fast as they can)")
	flag.Parse()
	if *clients < 1 || *clients > 1000 || *writers < 0 || *writers > 100 || *pipeline < 1 || *pipeline > 1000 ||
		*keys < 1 || *keys > 10_000_000 || *requests < *clients**pipeline || *writeEvery < 0 {
		fmt.Fprintln(os.Stderr, "benchtrack: clients 1..1000, writers 0..100, pipeline 1..1000, keys 1..10M, requests ≥ clients×pipeline")
		os.Exit(2)
	}
	if err := fill(*addr, *keys); err != nil {
		fmt.Fprintln(os.Stderr, "benchtrack: filling the keys:", err)
		os.Exit(1)
	}
	perClient := *requests / *clients / *pipeline
	// paced holds one token per -write-every GETs done (nil: unpaced).
	var paced chan struct{}
	var getsDone atomic.Int64
	if *writeEvery > 0 {
		paced = make(chan struct{}, *requests / *writeEvery + 1)
	}
	var pushes, sets atomic.Int64
	var firstErr atomic.Pointer[error]
	stop := make(chan struct{})
	var wwg sync.WaitGroup
	for range *writers {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			if err := write(*addr, *keys, stop, paced, &sets); err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
		}()
	}
	var wg sync.WaitGroup
	start := time.Now()
	for range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := read(*addr, *keys, *pipeline, perClient, func(gets int) {
				if paced == nil {
					return
				}
				after := getsDone.Add(int64(gets))
				for range after/int64(*writeEvery) - (after-int64(gets))/int64(*writeEvery) {
					select {
					case paced <- struct{}{}:
					default:
					}
				}
			})
			pushes.Add(n)
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	wwg.Wait()
	if p := firstErr.Load(); p != nil {
		fmt.Fprintln(os.Stderr, "benchtrack:", *p)
		os.Exit(1)
	}
	done := perClient * *pipeline * *clients
	fmt.Printf("%.0f %d %d\n", float64(done)/elapsed.Seconds(), pushes.Load(), sets.Load())
}

func keyName(i int) string { return "key:" + strconv.Itoa(i) }

// command appends one command in RESP.
func command(b []byte, args ...string) []byte { return resp.AppendCommand(b, args...) }

type conn struct {
	c net.Conn
	r *bufio.Reader
}

func dial(addr string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

// reply reads one reply; a push (RESP3 '>') is skipped and counted.
func (c *conn) reply() (pushes int64, err error) {
	for {
		kind, err := c.skip()
		if err != nil {
			return pushes, err
		}
		if kind != '>' {
			return pushes, nil
		}
		pushes++
	}
}

// skip reads one RESP2/RESP3 value and returns its type byte; an error
// reply is an error.
func (c *conn) skip() (byte, error) {
	_ = c.c.SetReadDeadline(time.Now().Add(60 * time.Second))
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 3 {
		return 0, errors.New("short line")
	}
	kind, body := line[0], string(line[1:len(line)-2])
	switch kind {
	case '+', ':', '_', '#', ',':
		return kind, nil
	case '-':
		return kind, errors.New(body)
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return kind, err
		}
		_, err = c.r.Discard(n + 2)
		return kind, err
	case '*', '>', '~', '%':
		n, err := strconv.Atoi(body)
		if err != nil {
			return kind, err
		}
		if kind == '%' {
			n *= 2
		}
		for range max(n, 0) {
			if _, err := c.skip(); err != nil {
				return kind, err
			}
		}
		return kind, nil
	}
	return kind, fmt.Errorf("unexpected reply type %q", kind)
}

func (c *conn) roundTrip(req []byte, replies int) (pushes int64, err error) {
	_ = c.c.SetWriteDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.c.Write(req); err != nil {
		return 0, err
	}
	for range replies {
		n, err := c.reply()
		pushes += n
		if err != nil {
			return pushes, err
		}
	}
	return pushes, nil
}

func fill(addr string, keys int) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.c.Close()
	val := string(make([]byte, 32))
	for from := 0; from < keys; from += 1000 {
		var req []byte
		n := 0
		for i := from; i < min(from+1000, keys); i++ {
			req = command(req, "SET", keyName(i), val)
			n++
		}
		if _, err := c.roundTrip(req, n); err != nil {
			return err
		}
	}
	return nil
}

// read runs rounds pipelines of GETs on a tracking connection; done is
// told how many GETs each round completed.
func read(addr string, keys, pipeline, rounds int, done func(gets int)) (pushes int64, err error) {
	c, err := dial(addr)
	if err != nil {
		return 0, err
	}
	defer c.c.Close()
	if _, err := c.roundTrip(command(command(nil, "HELLO", "3"), "CLIENT", "TRACKING", "on"), 2); err != nil {
		return 0, err
	}
	req := make([]byte, 0, 32*pipeline)
	for range rounds {
		req = req[:0]
		for range pipeline {
			req = command(req, "GET", keyName(rand.IntN(keys)))
		}
		n, err := c.roundTrip(req, pipeline)
		pushes += n
		if err != nil {
			return pushes, err
		}
		done(pipeline)
	}
	return pushes, nil
}

// write SETs random keys until stop: one per token of paced, or as fast as
// it can when paced is nil.
func write(addr string, keys int, stop <-chan struct{}, paced <-chan struct{}, sets *atomic.Int64) error {
	c, err := dial(addr)
	if err != nil {
		return err
	}
	defer c.c.Close()
	val := string(make([]byte, 32))
	for {
		if paced != nil {
			select {
			case <-stop:
				select {
				case <-paced: // owed: the readers passed its mark
				default:
					return nil
				}
			case <-paced:
			}
		} else {
			select {
			case <-stop:
				return nil
			default:
			}
		}
		if _, err := c.roundTrip(command(nil, "SET", keyName(rand.IntN(keys)), val), 1); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		sets.Add(1)
	}
}
