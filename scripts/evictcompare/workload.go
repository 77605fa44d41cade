package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

func hotKey(i int) string  { return fmt.Sprintf("hot:%06d", i) }
func coldKey(i int) string { return fmt.Sprintf("cold:%07d", i) }

// valueFor is the value stored under key: the key, then bytes of a
// generator seeded from the run's seed and the key (the same for every server).
func valueFor(key string, o options) []byte {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	rng := rand.New(rand.NewPCG(o.seed, h))
	v := make([]byte, o.valueSize)
	n := copy(v, key)
	for i := n; i < len(v); i++ {
		v[i] = 'a' + byte(rng.IntN(26))
	}
	return v
}

func (r *run) hotAndCold(c *conn, s *server, o options) error {
	r.HotKeys, r.ColdKeys = o.hot, o.cold
	cpu0, err := sampleCPU(s.pid())
	if err != nil {
		return err
	}
	t0 := time.Now()
	const setBatch = 100
	for i := 0; i < o.hot; i += setBatch {
		for j := i; j < min(i+setBatch, o.hot); j++ {
			k := hotKey(j)
			c.send("SET", k, string(valueFor(k, o)))
		}
		if err := r.readSetReplies(c, min(i+setBatch, o.hot)-i); err != nil {
			return err
		}
	}
	reads := rand.New(rand.NewPCG(o.seed, 0x686f74)) // which hot keys are read, in order
	picked := make([]int, o.readBatch)
	for i := 0; i < o.cold; i += o.readEvery {
		end := min(i+o.readEvery, o.cold)
		for j := i; j < end; j++ {
			k := coldKey(j)
			c.send("SET", k, string(valueFor(k, o)))
		}
		if err := r.readSetReplies(c, end-i); err != nil {
			return err
		}
		for j := range picked {
			picked[j] = reads.IntN(o.hot)
			c.send("GET", hotKey(picked[j]))
		}
		if err := c.flush(); err != nil {
			return err
		}
		for _, h := range picked {
			v, err := c.read()
			if err != nil {
				return fmt.Errorf("GET: %w", err)
			}
			r.HotReads++
			r.Requests++
			switch v := v.(type) {
			case nil:
			case string:
				r.HotReadHits++
				if k := hotKey(h); v != string(valueFor(k, o)) {
					r.HotReadWrong++
				}
			default:
				return fmt.Errorf("GET %s: %v", hotKey(h), v)
			}
		}
		time.Sleep(o.pause)
	}
	r.WallSeconds = time.Since(t0).Seconds()
	cpu1, err := sampleCPU(s.pid())
	if err != nil {
		return err
	}
	r.CPU = cpu1.since(cpu0, r.Requests)
	if err := r.readMemory(c, s); err != nil {
		return err
	}
	if r.HotSurvived, err = countExisting(c, o.hot, hotKey); err != nil {
		return err
	}
	r.ColdSurvived, err = countExisting(c, o.cold, coldKey)
	return err
}

// readSetReplies flushes the pipeline and reads n SET replies, counting
// those that are not OK.
func (r *run) readSetReplies(c *conn, n int) error {
	if err := c.flush(); err != nil {
		return err
	}
	for range n {
		v, err := c.read()
		if err != nil {
			return fmt.Errorf("SET: %w", err)
		}
		r.Requests++
		if v != "OK" {
			r.WriteErrors++
			if r.FirstWriteErr == "" {
				r.FirstWriteErr = fmt.Sprint(v)
			}
		}
	}
	return nil
}

// countExisting counts with multi-key EXISTS which of keys 0..n-1 are there.
func countExisting(c *conn, n int, key func(int) string) (int, error) {
	const chunk = 500
	total := 0
	for i := 0; i < n; i += chunk {
		args := []string{"EXISTS"}
		for j := i; j < min(i+chunk, n); j++ {
			args = append(args, key(j))
		}
		v, err := c.do(args...)
		if err != nil {
			return 0, err
		}
		k, ok := v.(int64)
		if !ok {
			return 0, fmt.Errorf("EXISTS: %v", v)
		}
		total += int(k)
	}
	return total, nil
}

// fillUntilRefused SETs new keys in pipelined batches until one is not
// answered OK, then checks that the refused SETs wrote nothing.
func (r *run) fillUntilRefused(c *conn, s *server, o options) error {
	const batch = 100
	cpu0, err := sampleCPU(s.pid())
	if err != nil {
		return err
	}
	t0 := time.Now()
	ok := 0
	n := &refusals{}
	r.Noeviction = n
	for i := 0; i < o.fillLimit && n.FirstRefusal == ""; i += batch {
		end := min(i+batch, o.fillLimit)
		for j := i; j < end; j++ {
			k := coldKey(j)
			c.send("SET", k, string(valueFor(k, o)))
		}
		if err := c.flush(); err != nil {
			return err
		}
		for range end - i {
			raw, err := c.readRaw()
			if err != nil {
				return fmt.Errorf("SET: %w", err)
			}
			r.Requests++
			if raw == "+OK\r\n" {
				ok++
			} else if n.FirstRefusal == "" {
				n.FirstRefusal = raw
				n.OKBeforeRefusal = ok
			}
		}
	}
	r.WallSeconds = time.Since(t0).Seconds()
	if cpu1, err := sampleCPU(s.pid()); err == nil {
		r.CPU = cpu1.since(cpu0, r.Requests)
	}
	if n.FirstRefusal == "" {
		r.Error = fmt.Sprintf("no SET refused after %d SETs of %d bytes", o.fillLimit, o.valueSize)
		return r.readMemory(c, s)
	}
	r.WriteErrors = r.Requests - ok
	if n.DBSizeAfterFill, err = c.int("DBSIZE"); err != nil {
		return err
	}
	// one more SET between two DBSIZEs
	before := n.DBSizeAfterFill
	c.send("SET", "oom:probe", string(valueFor("oom:probe", o)))
	if err := c.flush(); err != nil {
		return err
	}
	if n.ProbeRefusal, err = c.readRaw(); err != nil {
		return err
	}
	after, err := c.int("DBSIZE")
	if err != nil {
		return err
	}
	n.ProbeDBSizeDelta = after - before
	if n.ProbeKeyExists, err = c.int("EXISTS", "oom:probe"); err != nil {
		return err
	}
	n.WroteNothing = n.DBSizeAfterFill == int64(ok) && n.ProbeDBSizeDelta == 0 && n.ProbeKeyExists == 0
	return r.readMemory(c, s)
}

// readMemory fills in the INFO figures, DBSIZE and the process's RSS.
func (r *run) readMemory(c *conn, s *server) error {
	v, err := c.do("INFO")
	if err != nil {
		return err
	}
	info, _ := v.(string)
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\r\n") {
		if k, val, ok := strings.Cut(line, ":"); ok {
			fields[k] = val
		}
	}
	num := func(k string) int64 { n, _ := strconv.ParseInt(fields[k], 10, 64); return n }
	r.EvictedKeys = num("evicted_keys")
	r.UsedMemory = num("used_memory")
	r.UsedMemoryPeak = num("used_memory_peak")
	r.Maxmemory = num("maxmemory")
	r.UsedMemoryRSS = num("used_memory_rss")
	if r.Maxmemory > 0 {
		r.UsedOverMax = float64(r.UsedMemory) / float64(r.Maxmemory)
	}
	r.VmRSS, r.VmHWM = procMemory(s.pid())
	r.DBSize, err = c.int("DBSIZE")
	return err
}
