package node

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// pubsubStep is one command of a scripted session: conn sends args (none:
// only read), then reads replies replies.
type pubsubStep struct {
	conn    int
	args    []string
	replies int
}

func ps(conn int, replies int, args ...string) pubsubStep {
	return pubsubStep{conn: conn, args: args, replies: replies}
}

// runPubsubScript plays steps on conns fresh connections to addr and
// returns the transcript of every reply byte.
func runPubsubScript(t *testing.T, addr string, conns int, steps []pubsubStep) []string {
	t.Helper()
	cs := make([]*testConn, conns)
	for i := range cs {
		cs[i] = dialTestAddr(t, addr)
	}
	var out []string
	for i, st := range steps {
		c := cs[st.conn]
		if len(st.args) > 0 {
			c.send(st.args...)
		}
		for range st.replies {
			out = append(out, fmt.Sprintf("#%d %v: %q", i, st.args, c.read()))
		}
	}
	// Every reply must have been read: a leftover means a step's reply
	// count is wrong and the steps after it were misaligned.
	for i, c := range cs {
		_ = c.c.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
		if b, err := c.r.Peek(1); err == nil {
			t.Errorf("%s: connection %d has unread replies (%q...)", addr, i, b)
		}
	}
	return out
}

func comparePubsubScripts(t *testing.T, conns int, steps []pubsubStep) {
	t.Helper()
	real := startRealRedis(t)
	s := startTestServer(t)
	want := runPubsubScript(t, real, conns, steps)
	got := runPubsubScript(t, s.Addr().String(), conns, steps)
	// Every connection must have been read to its end: a leftover reply
	// means a step's reply count is wrong (and the steps misaligned).
	if len(want) == 0 {
		t.Fatal("empty transcript")
	}
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("reply %d differs:\n redis: %s\n shoal: %s", i, w, g)
		}
	}
}

// TestPubsubRESP2MatchesRedis: the RESP2 subscribe context, messages,
// PUBSUB introspection and every (un)subscribe reply, byte for byte.
func TestPubsubRESP2MatchesRedis(t *testing.T) {
	comparePubsubScripts(t, 3, []pubsubStep{
		ps(0, 2, "SUBSCRIBE", "ch1", "ch2"),
		ps(0, 1, "SUBSCRIBE", "ch1"),
		ps(0, 2, "PSUBSCRIBE", "h?llo", "news.*"),
		ps(0, 1, "SSUBSCRIBE", "sch"),
		ps(0, 1, "PING"),
		ps(0, 1, "PING", "hey"),
		ps(0, 1, "GET", "k"),
		ps(0, 1, "CLIENT", "LIST"),
		ps(0, 1, "MULTI"),
		ps(1, 1, "PUBLISH", "ch1", "m1"),
		ps(0, 1),
		ps(1, 1, "PUBLISH", "hello", "m2"),
		ps(0, 1),
		ps(1, 1, "PUBLISH", "news.tech", ""),
		ps(0, 1),
		ps(1, 1, "SPUBLISH", "sch", "m3"),
		ps(0, 1),
		ps(1, 1, "PUBLISH", "nobody", "m4"),
		ps(1, 1, "PUBSUB", "CHANNELS", "ch1"),
		ps(1, 1, "PUBSUB", "CHANNELS", "zz*"),
		ps(1, 1, "PUBSUB", "NUMSUB", "ch1", "ch2", "none"),
		ps(1, 1, "PUBSUB", "NUMSUB"),
		ps(1, 1, "PUBSUB", "NUMPAT"),
		ps(1, 1, "PUBSUB", "SHARDCHANNELS"),
		ps(1, 1, "PUBSUB", "SHARDNUMSUB", "sch", "x"),
		ps(1, 1, "PUBSUB", "HELP"),
		ps(1, 1, "PUBSUB", "FOO"),
		ps(1, 1, "PUBSUB", "CHANNELS", "a", "b"),
		ps(1, 1, "PUBSUB", "NUMPAT", "x"),
		ps(1, 1, "PUBLISH", "x"),
		ps(1, 1, "SUBSCRIBE"),
		ps(0, 1, "UNSUBSCRIBE", "ch1"),
		ps(0, 1, "UNSUBSCRIBE"),
		ps(0, 1, "UNSUBSCRIBE"),
		ps(0, 1, "UNSUBSCRIBE", "never"),
		ps(0, 1, "PUNSUBSCRIBE", "h?llo"),
		ps(0, 1, "PUNSUBSCRIBE"),
		ps(0, 1, "PUNSUBSCRIBE"),
		ps(0, 1, "PING"),
		ps(0, 1, "SUNSUBSCRIBE"),
		ps(0, 1, "SUNSUBSCRIBE"),
		ps(0, 1, "PING"),
		ps(0, 1, "GET", "k"),
		// SUBSCRIBE inside MULTI is allowed (backward compatibility),
		// SSUBSCRIBE is not.
		ps(2, 1, "MULTI"),
		ps(2, 1, "SUBSCRIBE", "t1"),
		ps(2, 1, "SSUBSCRIBE", "t2"),
		ps(2, 1, "EXEC"),
		ps(1, 1, "PUBLISH", "t1", "in-multi"),
		ps(2, 1),
		ps(2, 1, "PING"),
		ps(2, 1, "RESET"),
		ps(2, 1, "PING"),
		ps(1, 1, "PUBSUB", "NUMSUB", "t1"),
		ps(0, 1, "QUIT"),
	})
}

// TestPubsubManyDeliveriesMatchRedis: a PUBLISH that hands two
// subscribers two messages each (their channel, then their pattern) and a
// third one, five in all, with bodies small enough to be gathered by the
// publisher (pubsubDeliveries), too many to gather at once, and too big for
// its buffer: each subscriber's stream is Redis's. (A client with several
// matching patterns is left out: Redis 7.0 walks its patterns in the order
// of a hash table with a random seed.)
func TestPubsubManyDeliveriesMatchRedis(t *testing.T) {
	small, mid, big := "m", strings.Repeat("b", 150), strings.Repeat("x", 500)
	steps := []pubsubStep{
		ps(0, 1, "SUBSCRIBE", "chan"),
		ps(0, 1, "PSUBSCRIBE", "c*"),
		ps(1, 1, "PSUBSCRIBE", "*"),
		ps(2, 1, "SUBSCRIBE", "chan"),
		ps(2, 1, "PSUBSCRIBE", "*n"),
	}
	for _, body := range []string{small, mid, big, small} {
		steps = append(steps, ps(3, 1, "PUBLISH", "chan", body), ps(0, 2), ps(1, 1), ps(2, 2))
	}
	comparePubsubScripts(t, 4, append(steps, ps(3, 1, "PUBLISH", "other", small), ps(1, 1)))
}

// TestPubsubRESP3MatchesRedis: push messages, normal commands allowed while
// subscribed.
func TestPubsubRESP3MatchesRedis(t *testing.T) {
	real := startRealRedis(t)
	s := startTestServer(t)
	script := []pubsubStep{
		ps(0, 2, "SUBSCRIBE", "a", "b"),
		ps(0, 1, "PSUBSCRIBE", "*"),
		ps(0, 1, "SSUBSCRIBE", "s"),
		ps(0, 1, "GET", "nokey"),
		ps(0, 1, "PING"),
		ps(0, 1, "SET", "k", "v"),
		ps(1, 1, "PUBLISH", "a", "hello"),
		ps(0, 2),
		ps(1, 1, "SPUBLISH", "s", "x"),
		ps(0, 1),
		ps(0, 1, "UNSUBSCRIBE", "a"),
		ps(0, 1, "UNSUBSCRIBE"),
		ps(0, 1, "UNSUBSCRIBE"),
		ps(0, 1, "PUNSUBSCRIBE"),
		ps(0, 1, "PUNSUBSCRIBE"),
		ps(0, 1, "SUNSUBSCRIBE", "s", "t"),
		ps(0, 1, "SUNSUBSCRIBE"),
	}
	transcript := func(addr string) []string {
		c0, c1 := dialTestAddr(t, addr), dialTestAddr(t, addr)
		hello := c0.do("HELLO", "3")
		if !strings.HasPrefix(hello, "%7\r\n") {
			t.Fatalf("HELLO 3: %q", hello)
		}
		cs := []*testConn{c0, c1}
		var out []string
		for i, st := range script {
			c := cs[st.conn]
			if len(st.args) > 0 {
				c.send(st.args...)
			}
			for range st.replies {
				out = append(out, fmt.Sprintf("#%d %v: %q", i, st.args, c.read()))
			}
		}
		return out
	}
	want, got := transcript(real), transcript(s.Addr().String())
	if strings.Join(want, "\n") != strings.Join(got, "\n") {
		t.Errorf("RESP3 transcripts differ:\nredis:\n%s\nshoal:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

// TestPubsubOrderingPerPublisher: one publisher's messages arrive in order
// at every subscriber, with replies to the subscriber's own commands
// interleaved where they were sent (RESP3).
func TestPubsubOrderingPerPublisher(t *testing.T) {
	s := startTestServer(t)
	ctx := context.Background()
	pub := redis.NewClient(&redis.Options{Addr: s.Addr().String()})
	defer pub.Close()
	const subs, msgs = 4, 2000
	var pss []*redis.PubSub
	for range subs {
		c := redis.NewClient(&redis.Options{Addr: s.Addr().String()})
		defer c.Close()
		p := c.Subscribe(ctx, "ord")
		if _, err := p.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		pss = append(pss, p)
	}
	for i := range msgs {
		n, err := pub.Publish(ctx, "ord", fmt.Sprint(i)).Result()
		if err != nil || n != subs {
			t.Fatalf("PUBLISH #%d = %d, %v", i, n, err)
		}
	}
	for j, p := range pss {
		for i := range msgs {
			msg, err := p.ReceiveTimeout(ctx, 5*time.Second)
			if err != nil {
				t.Fatalf("subscriber %d message %d: %v", j, i, err)
			}
			m, ok := msg.(*redis.Message)
			if !ok {
				t.Fatalf("subscriber %d: %T %v", j, msg, msg)
			}
			if m.Payload != fmt.Sprint(i) || m.Channel != "ord" {
				t.Fatalf("subscriber %d got %q on %q, want %d", j, m.Payload, m.Channel, i)
			}
		}
		_ = p.Close()
	}
}

// TestPubsubGoRedis: go-redis's PubSub API (SUBSCRIBE, PSUBSCRIBE,
// SSUBSCRIBE, channel delivery, PUBSUB NUMSUB) over RESP2 and RESP3.
func TestPubsubGoRedis(t *testing.T) {
	s := startTestServer(t)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("resp", proto), func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: s.Addr().String(), Protocol: proto})
			defer c.Close()
			// The previous protocol's subscribers closed their connections;
			// the server drops their subscriptions when it sees that.
			deadline := time.Now().Add(5 * time.Second)
			for (c.PubSubNumPat(ctx).Val() != 0 || c.PubSubShardNumSub(ctx, "shardy").Val()["shardy"] != 0 ||
				c.PubSubNumSub(ctx, "news").Val()["news"] != 0) && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			p := c.Subscribe(ctx, "news")
			defer p.Close()
			if err := p.PSubscribe(ctx, "sport.*"); err != nil {
				t.Fatal(err)
			}
			sp := c.SSubscribe(ctx, "shardy")
			defer sp.Close()
			if _, err := sp.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			// Wait until both subscriptions are registered.
			deadline = time.Now().Add(5 * time.Second)
			for c.PubSubNumPat(ctx).Val() != 1 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if n := c.PubSubNumSub(ctx, "news").Val()["news"]; n != 1 {
				t.Fatalf("NUMSUB news = %d", n)
			}
			if n := c.Publish(ctx, "news", "n1").Val(); n != 1 {
				t.Fatalf("PUBLISH news = %d", n)
			}
			if n := c.Publish(ctx, "sport.golf", "g1").Val(); n != 1 {
				t.Fatalf("PUBLISH sport.golf = %d", n)
			}
			if n := c.SPublish(ctx, "shardy", "s1").Val(); n != 1 {
				t.Fatalf("SPUBLISH = %d", n)
			}
			ch := p.Channel()
			got := map[string]string{}
			for len(got) < 2 {
				select {
				case m := <-ch:
					got[m.Channel] = m.Pattern + "|" + m.Payload
				case <-time.After(5 * time.Second):
					t.Fatalf("messages: %v", got)
				}
			}
			if got["news"] != "|n1" || got["sport.golf"] != "sport.*|g1" {
				t.Fatalf("messages: %v", got)
			}
			msg, err := sp.ReceiveTimeout(ctx, 5*time.Second)
			m, ok := msg.(*redis.Message)
			if err != nil || !ok || m.Channel != "shardy" || m.Payload != "s1" {
				t.Fatalf("smessage: %+v %v", msg, err)
			}
		})
	}
}

// TestPubsubClientStateAndCleanup: CLIENT LIST sub/psub/ssub and flags,
// INFO counters, CLIENT KILL removing the subscriptions and their writer.
func TestPubsubClientStateAndCleanup(t *testing.T) {
	s := startTestServer(t)
	sub := dialTest(t, s)
	ctl := dialTest(t, s)
	sub.do("CLIENT", "SETNAME", "subber")
	sub.send("SUBSCRIBE", "a", "b")
	sub.read()
	sub.read()
	sub.do("PSUBSCRIBE", "p*")
	sub.do("SSUBSCRIBE", "s")
	list := ctl.do("CLIENT", "LIST", "TYPE", "pubsub")
	for _, want := range []string{"name=subber", "flags=P", "sub=2", "psub=1", "ssub=1"} {
		if !strings.Contains(list, want) {
			t.Fatalf("CLIENT LIST TYPE pubsub lacks %q: %q", want, list)
		}
	}
	info := ctl.do("INFO", "stats")
	for _, want := range []string{"pubsub_channels:2\r\n", "pubsub_patterns:1\r\n", "pubsubshard_channels:1\r\n"} {
		if !strings.Contains(info, want) {
			t.Fatalf("INFO stats lacks %q", want)
		}
	}
	if got := ctl.do("CLIENT", "KILL", "TYPE", "pubsub"); got != ":1\r\n" {
		t.Fatalf("CLIENT KILL TYPE pubsub = %q", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		info = ctl.do("INFO", "stats")
		if strings.Contains(info, "pubsub_channels:0\r\n") && strings.Contains(info, "pubsub_patterns:0\r\n") &&
			strings.Contains(info, "pubsubshard_channels:0\r\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions left after CLIENT KILL: %q", info)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := ctl.do("PUBLISH", "a", "x"); got != ":0\r\n" {
		t.Fatalf("PUBLISH after kill = %q", got)
	}
}

// TestPubsubSlowSubscriberDisconnected: a subscriber that does not read
// cannot block PUBLISH; past client-output-buffer-limit pubsub it is
// disconnected.
func TestPubsubSlowSubscriberDisconnected(t *testing.T) {
	s := startTestServer(t, "--client-output-buffer-limit", "pubsub 256kb 0 0")
	raw, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if tc, ok := raw.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	if _, err := raw.Write(encodeCommand("SUBSCRIBE", "slow")); err != nil {
		t.Fatal(err)
	}
	pub := dialTest(t, s)
	deadline := time.Now().Add(5 * time.Second)
	for pub.do("PUBSUB", "NUMSUB", "slow") != "*2\r\n$4\r\nslow\r\n:1\r\n" {
		if time.Now().After(deadline) {
			t.Fatal("subscriber never registered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	payload := strings.Repeat("x", 64*1024)
	start := time.Now()
	dropped := false
	for i := range 2000 { // 128 MB at most: far beyond socket buffers + the limit
		r := pub.do("PUBLISH", "slow", payload)
		if r == ":0\r\n" {
			dropped = true
			t.Logf("subscriber dropped after %d messages", i)
			break
		}
		if time.Since(start) > 20*time.Second {
			break
		}
	}
	if !dropped {
		t.Fatal("the slow subscriber was never disconnected")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("PUBLISH was slowed down by the subscriber: %v", el)
	}
}

// TestPubsubPipelinedSubscribeMatchesRedis: replies of the commands before
// a SUBSCRIBE in one pipeline come first (they move into the push queue).
func TestPubsubPipelinedSubscribeMatchesRedis(t *testing.T) {
	comparePubsubScripts(t, 2, []pubsubStep{
		ps(0, 0, "SET", "k", "v"),
		ps(0, 0, "GET", "k"),
		ps(0, 0, "SUBSCRIBE", "z"),
		ps(0, 0, "PING"),
		ps(0, 4),
		ps(1, 1, "PUBLISH", "z", "after"),
		ps(0, 1),
	})
}

// TestPubsubConcurrentChurn: publishers, subscribers that come and go,
// protocol switches and introspection all at once (run with -race): no
// race, no deadlock, and every client's goroutines end.
func TestPubsubConcurrentChurn(t *testing.T) {
	s := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 16)
	for i := range 3 {
		go func() {
			c := redis.NewClient(&redis.Options{Addr: s.Addr().String(), PoolSize: 1})
			defer c.Close()
			for j := range 300 {
				if err := c.Publish(ctx, fmt.Sprint("ch", j%3), fmt.Sprint(i, j)).Err(); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for i := range 3 {
		go func() {
			proto := 2 + i%2
			c := redis.NewClient(&redis.Options{Addr: s.Addr().String(), Protocol: proto})
			defer c.Close()
			for range 30 {
				p := c.Subscribe(ctx, "ch0", "ch1")
				if err := p.PSubscribe(ctx, "ch*"); err != nil {
					done <- err
					return
				}
				if _, err := p.ReceiveTimeout(ctx, time.Second); err != nil {
					done <- err
					return
				}
				_ = p.Unsubscribe(ctx, "ch0")
				_ = p.Close()
			}
			done <- nil
		}()
	}
	go func() {
		c := dialTest(t, s)
		for range 50 {
			c.do("CLIENT", "LIST")
			c.do("INFO", "stats")
			c.do("PUBSUB", "NUMPAT")
		}
		done <- nil
	}()
	for range 7 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("churn did not finish")
		}
	}
	ctl := dialTest(t, s)
	deadline := time.Now().Add(5 * time.Second)
	for ctl.do("PUBSUB", "NUMPAT") != ":0\r\n" || ctl.do("PUBSUB", "NUMSUB", "ch0", "ch1") != "*4\r\n$3\r\nch0\r\n:0\r\n$3\r\nch1\r\n:0\r\n" {
		if time.Now().After(deadline) {
			t.Fatal("subscriptions left behind")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPubsubShardMatchesRedis: Redis's unit/pubsubshard (external:skip
// there, so the tcl suite cannot run it against shoal) as a byte-for-byte
// comparison, CLIENT REPLY OFF included.
func TestPubsubShardMatchesRedis(t *testing.T) {
	comparePubsubScripts(t, 5, []pubsubStep{
		ps(0, 1, "SSUBSCRIBE", "chan1"),
		ps(0, 1, "SSUBSCRIBE", "chan2"),
		ps(1, 1, "SPUBLISH", "chan1", "hello"),
		ps(1, 1, "SPUBLISH", "chan2", "world"),
		ps(0, 2),
		ps(0, 1, "SSUBSCRIBE", "chan1"),
		ps(0, 1, "SUNSUBSCRIBE", "chan1"),
		ps(1, 1, "SPUBLISH", "chan1", "hello"),
		ps(0, 2, "SUNSUBSCRIBE", "foo", "bar"),
		ps(1, 1, "PUBSUB", "SHARDNUMSUB", "abc", "def"),
		ps(2, 1, "SSUBSCRIBE", "chan2"),
		ps(1, 1, "SPUBLISH", "chan2", "two"),
		ps(0, 1),
		ps(2, 1),
		ps(1, 1, "PUBSUB", "SHARDNUMSUB", "chan2"),
		ps(1, 1, "PUBSUB", "SHARDCHANNELS"),
		ps(3, 1, "SUBSCRIBE", "chan2"),
		ps(1, 1, "PUBLISH", "chan2", "classic"),
		ps(3, 1),
		ps(1, 1, "PUBSUB", "CHANNELS"),
		ps(0, 1, "SUNSUBSCRIBE"),
		ps(0, 1, "SUNSUBSCRIBE"),
		ps(2, 1, "SUNSUBSCRIBE"),
		ps(3, 1, "UNSUBSCRIBE"),
		// A client with replies off still gets its (un)subscribe
		// confirmations and messages (Redis's CLIENT_PUSHING).
		ps(4, 0, "CLIENT", "REPLY", "OFF"),
		ps(4, 0, "PING"),
		ps(4, 1, "SSUBSCRIBE", "channel"),
		ps(1, 1, "SPUBLISH", "channel", "hello"),
		ps(4, 1),
		ps(4, 1, "SUNSUBSCRIBE", "channel"),
	})
}

// TestPubsubLargeBacklogArrivesInOrder: a subscriber that does not read
// while messages of 1 byte to 40 kB are published gets every one intact
// and in order once it reads — the push queue's 16 kB blocks are filled
// across message boundaries and written several per writev — and its
// omem returns to 0.
func TestPubsubLargeBacklogArrivesInOrder(t *testing.T) {
	s := startTestServer(t)
	ctx := context.Background()
	pub := redis.NewClient(&redis.Options{Addr: s.Addr().String()})
	defer pub.Close()
	sc := redis.NewClient(&redis.Options{Addr: s.Addr().String()})
	defer sc.Close()
	p := sc.Subscribe(ctx, "backlog")
	defer p.Close()
	if _, err := p.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	payload := func(i int) string {
		size := 1 + (i*7919)%40000 // 1 B .. 40 kB, in no particular order
		return strings.Repeat(string(rune('a'+i%26)), size) + fmt.Sprint(i)
	}
	const msgs = 300 // ~6 MB: past the socket buffers, under the 32 MB pubsub limit
	for i := range msgs {
		if n, err := pub.Publish(ctx, "backlog", payload(i)).Result(); err != nil || n != 1 {
			t.Fatalf("PUBLISH #%d = %d, %v", i, n, err)
		}
	}
	for i := range msgs {
		msg, err := p.ReceiveTimeout(ctx, 10*time.Second)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		m, ok := msg.(*redis.Message)
		if !ok || m.Payload != payload(i) {
			t.Fatalf("message %d: got %T of %d bytes, want %d bytes", i, msg, len(m.Payload), len(payload(i)))
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := pub.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(list, "\n") {
			if strings.Contains(line, " sub=1 ") && strings.Contains(line, " omem=0 ") {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the subscriber's omem did not return to 0: %s", list)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAppendCountIsDecimal: the short paths of appendCount write what
// strconv writes.
func TestAppendCountIsDecimal(t *testing.T) {
	for _, n := range append([]int{-100, -1, 1 << 40}, func() []int {
		var ns []int
		for n := range 1200 {
			ns = append(ns, n)
		}
		return ns
	}()...) {
		if got, want := string(appendCount([]byte("x"), n)), "x"+strconv.Itoa(n); got != want {
			t.Fatalf("appendCount(%d) = %q, want %q", n, got, want)
		}
	}
}
