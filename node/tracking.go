package node

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/slots"
)

// Client-side caching: CLIENT TRACKING (Redis 7.0's tracking.c).
//
// Default mode: after a read-only command of a tracking client, its keys
// are remembered in the tracking table (key → client ids; keys of every
// database share one entry, as in Redis). When a key changes — any write
// (propagateEffects, with the command's slots locked), expiry, eviction,
// a slot leaving the node — every client remembered for it gets one
// invalidation message and the key is forgotten. BCAST mode: the client
// names key prefixes; every changed key matching one is collected and sent
// to the prefix's clients, once per command (after its reply) or per cron
// tick for the keyspace's own deletions. FLUSHALL/FLUSHDB send a null
// invalidation ("everything") to every tracking client and empty the
// table.
//
// Messages: RESP3 clients get `>2 invalidate [keys]` pushes on their own
// connection; with REDIRECT they go to the other client — as a push if it
// speaks RESP3, as a `message` on __redis__:invalidate if it is a RESP2
// subscriber, else nowhere (and a redirect to a client that is gone turns
// into a `tracking-redir-broken` push to a RESP3 tracking client). A
// message for the client whose own command changed the key is held until
// its reply has been queued, so the invalidation follows the reply.
//
// Concurrency: trackingTable.mu guards the table, the prefix table and the
// tracking state of every client (clientTracking). Lock order: slot locks,
// then trackingTable.mu, then Server.mu (client lookup by id), then a push
// writer's mu. The hot path pays one atomic load per write (clients) and
// one bool test per read (the reading client's own tracking flag).

const trackingChannel = "__redis__:invalidate"

// trackingPrefixBytes is one BCAST prefix's cost beside its bytes: its
// string header in the client's list and its entries in the prefix table.
const trackingPrefixBytes = 64

// active reports whether a change may concern tracking: a client tracks,
// or keys are still in the table (the check every write makes).
func (t *trackingTable) active() bool { return t.clients.Load() != 0 || t.nkeys.Load() != 0 }

// registerTrackingHooks reads tracking-table-max-keys now and on every
// change.
func (s *Server) registerTrackingHooks() {
	s.tracking.maxKeys.Store(s.cfg.Int("tracking-table-max-keys"))
	s.cfg.OnChange("tracking-table-max-keys", func(string) error {
		s.tracking.maxKeys.Store(s.cfg.Int("tracking-table-max-keys"))
		return nil
	})
}

// trackingTable is the server's tracking state.
type trackingTable struct {
	clients atomic.Int32 // clients with tracking on
	// nkeys mirrors len(keys): keys stay tracked after their clients turn
	// tracking off (ids are dropped lazily), and writes to them must still
	// clear them.
	nkeys atomic.Int64
	// maxKeys is tracking-table-max-keys, stored when it changes (read
	// before every command while anyone tracks).
	maxKeys atomic.Int64

	mu       sync.Mutex
	keys     map[string]trackedIDs // default mode: key → client ids
	items    int64                 // ids across keys (tracking_total_items)
	prefixes map[string]*bcastPrefix
	bcastDue atomic.Bool // some prefix has keys to send
	evictRun int         // trackingLimitUsedSlots' timeout_counter
	scratch  [128]byte   // one invalidation's body while it is built
}

// trackedIDs is the set of clients that read one key: a short list while
// it is short — a read of a key the client already tracks, the common
// case, then costs one scan of adjacent ids instead of a hash map's
// dependent loads — and a map once it passes trackedIDsSmall ids.
type trackedIDs struct {
	small []int64
	big   map[int64]struct{}
}

// trackedIDsSmall is the most ids kept in the short list.
const trackedIDsSmall = 64

// add adds id; false when it was there already.
func (s *trackedIDs) add(id int64) bool {
	if s.big != nil {
		if _, ok := s.big[id]; ok {
			return false
		}
		s.big[id] = struct{}{}
		return true
	}
	if slices.Contains(s.small, id) {
		return false
	}
	if len(s.small) < trackedIDsSmall {
		s.small = append(s.small, id)
		return true
	}
	s.big = make(map[int64]struct{}, 2*trackedIDsSmall)
	for _, x := range s.small {
		s.big[x] = struct{}{}
	}
	s.big[id] = struct{}{}
	s.small = nil
	return true
}

func (s *trackedIDs) len() int { return len(s.small) + len(s.big) }

// each calls f for every id.
func (s *trackedIDs) each(f func(id int64)) {
	for _, id := range s.small {
		f(id)
	}
	for id := range s.big {
		f(id)
	}
}

// bcastPrefix is one BCAST prefix: its clients and the keys changed since
// the last broadcast, each with the client that changed it last (NOLOOP).
type bcastPrefix struct {
	clients map[*Client]struct{}
	keys    map[string]*Client
}

// clientTracking is one client's tracking state. Fields other than
// enabled and caching are guarded by trackingTable.mu; those two belong to
// the client's goroutine.
type clientTracking struct {
	on, bcast, optin, optout, noloop, brokenRedir bool
	// inCommand: the client is running a command; invalidations for it
	// wait in pending until its reply is queued (Redis holds those of the
	// current client in tracking_pending_keys). The client's goroutine
	// stores it without the table's lock (twice per command); an
	// invalidator that holds pending for it sets hasPending, then looks at
	// inCommand again (sendAfterCommand), and the client looks at
	// hasPending after clearing inCommand, so one of the two always sends
	// what was held.
	inCommand  atomic.Bool
	hasPending atomic.Bool
	redirect   int64
	prefixes   []string // BCAST prefixes, sorted
	// prefixBytes is what the prefixes cost, for client eviction (read by
	// the client's own goroutine, the only writer).
	prefixBytes int64
	push        *pushWriter

	// enabled mirrors `on` for the client's own goroutine (no lock on the
	// read path).
	enabled bool
	// caching is CLIENT CACHING yes/no for the next command (or
	// transaction).
	caching bool
	// pending holds the invalidations that arrived while it ran a
	// command, sent after its reply.
	pending []byte
}

// cmdClientTracking: CLIENT TRACKING on|off [REDIRECT id] [PREFIX p ...]
// [BCAST] [OPTIN] [OPTOUT] [NOLOOP].
func cmdClientTracking(c *Client, args [][]byte) {
	var redirect int64
	var bcast, optin, optout, noloop bool
	var prefixes []string
	for j := 3; j < len(args); j++ {
		more := j < len(args)-1
		switch {
		case command.ArgIs(args[j], "redirect") && more:
			j++
			if redirect != 0 {
				c.Error("ERR A client can only redirect to a single other client")
				return
			}
			id, ok := command.ParseInt64(args[j])
			if !ok {
				c.ErrNotInteger()
				return
			}
			if c.srv.clientByID(id) == nil {
				c.Error("ERR The client ID you want redirect to does not exist")
				return
			}
			redirect = id
		case command.ArgIs(args[j], "bcast"):
			bcast = true
		case command.ArgIs(args[j], "optin"):
			optin = true
		case command.ArgIs(args[j], "optout"):
			optout = true
		case command.ArgIs(args[j], "noloop"):
			noloop = true
		case command.ArgIs(args[j], "prefix") && more:
			j++
			prefixes = append(prefixes, string(args[j]))
		default:
			c.ErrSyntax()
			return
		}
	}
	t := &c.srv.tracking
	switch {
	case command.ArgIs(args[2], "on"):
		t.mu.Lock()
		msg := c.trackingOptionsError(bcast, optin, optout, prefixes)
		if msg == "" {
			if c.trk.push == nil {
				t.mu.Unlock()
				c.ensurePushWriter() // pushes reach the client beside its replies
				t.mu.Lock()
			}
			t.enable(c, redirect, bcast, optin, optout, noloop, prefixes)
		}
		t.mu.Unlock()
		if msg != "" {
			c.Error(msg)
			return
		}
	case command.ArgIs(args[2], "off"):
		t.mu.Lock()
		t.disable(c)
		t.mu.Unlock()
	default:
		c.ErrSyntax()
		return
	}
	c.OK()
}

// trackingOptionsError checks CLIENT TRACKING ON's options against each
// other and the client's state (t.mu held), in Redis's order.
func (c *Client) trackingOptionsError(bcast, optin, optout bool, prefixes []string) string {
	st := &c.trk
	switch {
	case !bcast && len(prefixes) > 0:
		return "ERR PREFIX option requires BCAST mode to be enabled"
	case st.on && st.bcast != bcast:
		return "ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."
	case bcast && (optin || optout):
		return "ERR OPTIN and OPTOUT are not compatible with BCAST"
	case optin && optout:
		return "ERR You can't specify both OPTIN mode and OPTOUT mode"
	case optin && st.optout || optout && st.optin:
		return "ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."
	}
	if !bcast {
		return ""
	}
	overlap := func(a, b string) bool { return strings.HasPrefix(a, b) || strings.HasPrefix(b, a) }
	for i, p := range prefixes {
		for _, old := range st.prefixes {
			if overlap(p, old) {
				return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + old + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range prefixes[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// enable is Redis's enableTracking (t.mu held).
func (t *trackingTable) enable(c *Client, redirect int64, bcast, optin, optout, noloop bool, prefixes []string) {
	st := &c.trk
	if !st.on {
		t.clients.Add(1)
	}
	st.on, st.enabled = true, true
	st.brokenRedir, st.bcast, st.optin, st.optout, st.noloop = false, false, false, false, false
	st.redirect = redirect
	st.push = c.ps.push
	if t.keys == nil {
		t.keys = map[string]trackedIDs{}
		t.prefixes = map[string]*bcastPrefix{}
	}
	if bcast {
		st.bcast = true
		if len(prefixes) == 0 {
			prefixes = []string{""}
		}
		for _, p := range prefixes {
			bp := t.prefixes[p]
			if bp == nil {
				bp = &bcastPrefix{clients: map[*Client]struct{}{}, keys: map[string]*Client{}}
				t.prefixes[p] = bp
			}
			if _, ok := bp.clients[c]; !ok {
				bp.clients[c] = struct{}{}
				st.prefixes = append(st.prefixes, p)
			}
		}
		slices.Sort(st.prefixes)
		st.prefixes = slices.Compact(st.prefixes)
		st.prefixBytes = 0
		for _, p := range st.prefixes {
			st.prefixBytes += trackingPrefixBytes + int64(len(p))
		}
	}
	st.optin, st.optout, st.noloop = optin, optout, noloop
}

// disable is Redis's disableTracking (t.mu held): the client's ids stay in
// the table and are skipped lazily.
func (t *trackingTable) disable(c *Client) {
	st := &c.trk
	if !st.on {
		return
	}
	for _, p := range st.prefixes {
		if bp := t.prefixes[p]; bp != nil {
			delete(bp.clients, c)
			if len(bp.clients) == 0 {
				delete(t.prefixes, p)
			}
		}
	}
	st.prefixes = nil
	t.clients.Add(-1)
	st.on, st.bcast, st.optin, st.optout, st.noloop, st.brokenRedir = false, false, false, false, false, false
	st.redirect, st.prefixBytes, st.enabled, st.caching = 0, 0, false, false
	st.inCommand.Store(false) // it no longer runs commands as a tracking client
}

// trackingClosed turns tracking off for a client that closed or RESET.
func (c *Client) trackingClosed() {
	t := &c.srv.tracking
	if !c.trk.enabled {
		return
	}
	t.mu.Lock()
	t.disable(c)
	t.mu.Unlock()
}

// trackingRemember records, for the tracking client c, the keys of a
// read-only command run for it (Redis's trackingRememberKeys, called from
// call()): the command's own keys, or — for a command of a script c runs
// — the keys the script declared, as Redis 7.0 tracks a script's
// declared keys once it reads anything.
func (c *Client) trackingRemember(ran *Client, spec *command.Spec, args [][]byte) {
	if spec.Flags&command.FlagReadonly == 0 || spec.Flags&command.FlagPubsub != 0 {
		return
	}
	switch spec.FullName() {
	case "eval_ro", "evalsha_ro", "fcall_ro":
		return // their read commands remember the declared keys
	}
	var keys [][]byte
	var keyBuf [4][]byte // a command's keys without allocating, for most
	if ran != c {
		keys = ran.scriptKeys
	} else {
		pos, err := command.Keys(spec, args, c.trackKeyBuf[:0])
		if err != nil {
			return
		}
		c.trackKeyBuf = pos
		keys = keyBuf[:0]
		for _, p := range pos {
			keys = append(keys, args[p])
		}
	}
	if len(keys) == 0 {
		return
	}
	st := &c.trk
	t := &c.srv.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	if !st.on || st.bcast || (st.optin && !st.caching) || (st.optout && st.caching) {
		return
	}
	for _, key := range keys {
		ids, known := t.keys[string(key)]
		if !ids.add(c.id) {
			continue // it tracks the key already (a copy of the entry: unchanged)
		}
		t.items++
		t.keys[string(key)] = ids
		if !known {
			t.nkeys.Store(int64(len(t.keys)))
		}
	}
	if max := t.maxKeys.Load(); max > 0 && int64(len(t.keys)) > max {
		t.limitLocked(c.srv, max)
	}
}

// invalidate is Redis's trackingInvalidateKey for a key changed by client
// by (nil: the keyspace itself, as expiry); bcast also collects it for the
// BCAST prefixes it matches.
func (s *Server) trackingInvalidate(by *Client, key []byte, bcast bool) {
	t := &s.tracking
	if !t.active() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.invalidateLocked(s, by, string(key), bcast)
}

func (t *trackingTable) invalidateLocked(s *Server, by *Client, key string, bcast bool) {
	if bcast {
		for p, bp := range t.prefixes {
			if strings.HasPrefix(key, p) {
				bp.keys[key] = by
				t.bcastDue.Store(true)
			}
		}
	}
	ids, ok := t.keys[key]
	if !ok {
		return
	}
	delete(t.keys, key)
	t.nkeys.Store(int64(len(t.keys)))
	t.items -= int64(ids.len())
	ids.each(func(id int64) {
		target := s.clientByID(id)
		if target == nil || !target.trk.on || target.trk.bcast {
			return
		}
		if target == by && target.trk.noloop {
			return // by is the client a script runs for, not the script's
		}
		// After the reply of the command it is running, if any: its own
		// write, a key its command found expired, or another client's
		// write meanwhile.
		t.sendAfterCommand(s, target, appendKeyArray(t.scratch[:0], key))
	})
}

// sendAfterCommand sends body to target, or holds it in target's pending
// buffer until the reply of the command it is running (t.mu held).
func (t *trackingTable) sendAfterCommand(s *Server, target *Client, body []byte) {
	st := &target.trk
	if !st.inCommand.Load() {
		t.send(s, target, body)
		return
	}
	st.pending = appendInvalidationBody(append(st.pending, body...))
	st.hasPending.Store(true)
	if !st.inCommand.Load() {
		// Its command ended meanwhile, maybe before it could see
		// hasPending: its reply is queued, send now.
		t.flushPendingLocked(s, target)
	}
}

// appendKeyArray appends a one-key array; appendInvalidationBody marks the
// end of one pending message (pending holds bodies separated by markers).
func appendKeyArray(b []byte, key string) []byte {
	b = append(b, "*1\r\n"...)
	return appendBulkStr(b, key)
}

// pendingSep separates the bodies in clientTracking.pending: a byte that
// cannot start a RESP value.
const pendingSep = 0

func appendInvalidationBody(b []byte) []byte { return append(b, pendingSep) }

// send delivers one invalidation whose body (an array of keys, or a null)
// is given, to c or its redirect target (Redis's sendTrackingMessage;
// t.mu held).
func (t *trackingTable) send(s *Server, c *Client, body []byte) {
	st := &c.trk
	to, redirected := c, false
	if st.redirect != 0 {
		to = s.clientByID(st.redirect)
		if to == nil {
			st.brokenRedir = true
			if c.respShown.Load() == 3 && st.push != nil {
				b := appendPushHeader(nil, 3, 2)
				b = appendBulkStr(b, "tracking-redir-broken")
				b = append(b, ':')
				b = append(b, []byte(strconv.FormatInt(st.redirect, 10))...)
				b = append(b, '\r', '\n')
				st.push.enqueue(b, s)
			}
			return
		}
		redirected = true
	}
	push := to.trk.push
	if to != c {
		push = to.pushForTracking()
	}
	if push == nil {
		return
	}
	var b []byte
	switch {
	case to.respShown.Load() == 3:
		b = appendPushHeader(nil, 3, 2)
		b = appendBulkStr(b, "invalidate")
	case redirected && to.subscribed():
		b = appendPushHeader(nil, 2, 3)
		b = appendBulkStr(b, "message")
		b = appendBulkStr(b, trackingChannel)
	default:
		return // a RESP2 client cannot get pushes on its own connection
	}
	push.enqueue(append(b, body...), s)
	if push.backedUp() {
		// Its output grows while its socket does not drain: account it
		// for client eviction now, as Redis's sendTrackingMessage (the
		// next command evicts it if over the limit). Output that is being
		// written at once is accounted when written (flushNow): counting
		// it here would make maxmemory evict again for messages that
		// eviction itself queued, which Redis writes before its next
		// command.
		s.updateClientMemory(to)
	}
}

// pushForTracking returns a redirect target's push queue: it has one once
// it subscribed (Pub/Sub), read under the Pub/Sub registry's lock, which
// published it. A RESP3 redirect target that never subscribed has none
// and gets nothing (Redis would push to it).
func (c *Client) pushForTracking() *pushWriter {
	r := c.srv.pubsub
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !c.subscribed() {
		return nil
	}
	return c.ps.push
}

// trackingFlushPending sends the invalidations held while c ran a command
// (trackingHandlePendingKeyInvalidations); done says the command is over.
// It takes the table's lock only when something is held.
func (c *Client) trackingFlushPending(done bool) {
	if done {
		c.trk.inCommand.Store(false)
	}
	if !c.trk.hasPending.Load() {
		return
	}
	t := &c.srv.tracking
	t.mu.Lock()
	t.flushPendingLocked(c.srv, c)
	t.mu.Unlock()
}

// flushPendingLocked sends c's held invalidations (t.mu held).
func (t *trackingTable) flushPendingLocked(s *Server, c *Client) {
	c.trk.hasPending.Store(false)
	for body := range splitPending(c.trk.pending) {
		if c.trk.on {
			t.send(s, c, body)
		}
	}
	c.trk.pending = c.trk.pending[:0]
}

// trackingBeforeCommand marks a tracking client as running a command.
func (c *Client) trackingBeforeCommand() { c.trk.inCommand.Store(true) }

// splitPending yields the bodies of a pending buffer.
func splitPending(b []byte) func(func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(b) > 0 {
			i := 0
			for i < len(b) && b[i] != pendingSep {
				i++
			}
			if !yield(b[:i:i]) {
				return
			}
			b = b[min(i+1, len(b)):]
		}
	}
}

// trackingBroadcast sends the keys collected per BCAST prefix to its
// clients (trackingBroadcastInvalidationMessages): sorted, one array per
// prefix, without the keys a NOLOOP client changed itself.
func (s *Server) trackingBroadcast() {
	t := &s.tracking
	if !t.bcastDue.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.bcastDue.Store(false)
	for _, bp := range t.prefixes {
		if len(bp.keys) == 0 {
			continue
		}
		keys := make([]string, 0, len(bp.keys))
		for k := range bp.keys {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var all []byte
		for c := range bp.clients {
			if !c.trk.noloop {
				if all == nil {
					all = appendKeys(nil, keys, bp.keys, nil)
				}
				t.send(s, c, all)
				continue
			}
			if own := appendKeys(nil, keys, bp.keys, c); own != nil {
				t.send(s, c, own)
			}
		}
		bp.keys = map[string]*Client{}
	}
}

// appendKeys appends the array of keys, leaving out those last changed by
// skip (nil: none); nil when nothing is left.
func appendKeys(b []byte, keys []string, by map[string]*Client, skip *Client) []byte {
	n := 0
	for _, k := range keys {
		if skip == nil || by[k] != skip {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	b = append(b, '*')
	b = append(b, []byte(strconv.Itoa(n))...)
	b = append(b, '\r', '\n')
	for _, k := range keys {
		if skip == nil || by[k] != skip {
			b = appendBulkStr(b, k)
		}
	}
	return b
}

// trackingFlushed sends every tracking client a null invalidation and
// empties the table (FLUSHALL, FLUSHDB: trackingInvalidateKeysOnFlush).
// by's own message follows its reply.
func (s *Server) trackingFlushed(by *Client) {
	t := &s.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clients.Load() != 0 {
		for _, c := range s.liveClients() {
			if !c.trk.on {
				continue
			}
			// The null of the tracking client's protocol, as Redis.
			null := []byte("*-1\r\n")
			if c.respShown.Load() == 3 {
				null = []byte("_\r\n")
			}
			t.sendAfterCommand(s, c, null)
		}
	}
	t.keys = map[string]trackedIDs{}
	t.nkeys.Store(0)
	t.items = 0
}

// trackingLimit keeps the table within tracking-table-max-keys
// (trackingLimitUsedSlots): random keys are invalidated, with an effort
// that grows while the limit stays exceeded. It runs before every command
// while clients track, as processCommand does (so its messages precede
// the command's reply), and from the cron.
func (s *Server) trackingLimit() {
	t := &s.tracking
	max := t.maxKeys.Load()
	if t.clients.Load() == 0 || max <= 0 || t.nkeys.Load() <= max {
		return // (the effort counter restarts on the next run over the limit)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.limitLocked(s, max)
}

func (t *trackingTable) limitLocked(s *Server, max int64) {
	if int64(len(t.keys)) <= max {
		return
	}
	effort := 100 * (t.evictRun + 1)
	for k := range t.keys { // map order is random enough for a random walk
		if effort == 0 {
			break
		}
		effort--
		t.invalidateLocked(s, nil, k, false)
		if int64(len(t.keys)) <= max {
			t.evictRun = 0
			return
		}
	}
	t.evictRun++
}

// trackingCounts returns INFO's tracking_total_keys, _items and
// _prefixes.
func (s *Server) trackingCounts() (keys, items, prefixes int64) {
	t := &s.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	return int64(len(t.keys)), t.items, int64(len(t.prefixes))
}

// cmdClientCaching: CLIENT CACHING yes|no, for the next command in OPTIN /
// OPTOUT mode.
func cmdClientCaching(c *Client, args [][]byte) {
	t := &c.srv.tracking
	t.mu.Lock()
	on, optin, optout := c.trk.on, c.trk.optin, c.trk.optout
	t.mu.Unlock()
	if !on {
		c.Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch {
	case command.ArgIs(args[2], "yes"):
		if !optin {
			c.Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case command.ArgIs(args[2], "no"):
		if !optout {
			c.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		c.ErrSyntax()
		return
	}
	c.trk.caching = true
	c.OK()
}

// cmdClientGetredir: CLIENT GETREDIR.
func cmdClientGetredir(c *Client, args [][]byte) {
	t := &c.srv.tracking
	t.mu.Lock()
	on, redirect := c.trk.on, c.trk.redirect
	t.mu.Unlock()
	if !on {
		redirect = -1
	}
	c.Int(redirect)
}

// trackingInfo is what CLIENT TRACKINGINFO reports, copied under the lock.
type trackingInfo struct {
	on, bcast, optin, optout, noloop, brokenRedir bool
	redirect                                      int64
	prefixes                                      []string
}

// cmdClientTrackingInfo: CLIENT TRACKINGINFO.
func cmdClientTrackingInfo(c *Client, args [][]byte) {
	t := &c.srv.tracking
	t.mu.Lock()
	st := trackingInfo{on: c.trk.on, bcast: c.trk.bcast, optin: c.trk.optin, optout: c.trk.optout,
		noloop: c.trk.noloop, brokenRedir: c.trk.brokenRedir, redirect: c.trk.redirect,
		prefixes: slices.Clone(c.trk.prefixes)}
	t.mu.Unlock()
	flags := []string{"off"}
	if st.on {
		flags[0] = "on"
	}
	if st.bcast {
		flags = append(flags, "bcast")
	}
	if st.optin {
		flags = append(flags, "optin")
		if c.trk.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if st.optout {
		flags = append(flags, "optout")
		if c.trk.caching {
			flags = append(flags, "caching-no")
		}
	}
	if st.noloop {
		flags = append(flags, "noloop")
	}
	if st.brokenRedir {
		flags = append(flags, "broken_redirect")
	}
	c.Map(3)
	c.BulkString("flags")
	c.Set(len(flags))
	for _, f := range flags {
		c.BulkString(f)
	}
	c.BulkString("redirect")
	if st.on {
		c.Int(st.redirect)
	} else {
		c.Int(-1)
	}
	c.BulkString("prefixes")
	c.Array(len(st.prefixes))
	for _, p := range st.prefixes {
		c.BulkString(p)
	}
}

// trackingFlags returns CLIENT LIST's tracking flags (t, R, B) and redir.
func (c *Client) trackingFlags() (flags string, redir int64) {
	t := &c.srv.tracking
	t.mu.Lock()
	defer t.mu.Unlock()
	redir = -1
	if c.trk.on {
		flags += "t"
		redir = c.trk.redirect
	}
	if c.trk.brokenRedir {
		flags += "R"
	}
	if c.trk.bcast {
		flags += "B"
	}
	return flags, redir
}

// trackingAfterCommand runs after each command of a client (handle): the
// invalidations held for it follow its reply, BCAST messages go out, and
// CLIENT CACHING's yes/no lapses unless the command was a CLIENT one or a
// transaction is open (it then covers the transaction).
func (c *Client) trackingAfterCommand() {
	if c.trk.caching && c.multi == nil {
		if sp := c.lastCmd.Load(); sp == nil || rootName(sp) != "client" {
			c.trk.caching = false
		}
	}
	if c.trk.enabled {
		c.trackingFlushPending(true)
	}
	c.srv.trackingBroadcast()
}

// rootName is the name of a command or of its container.
func rootName(sp *command.Spec) string {
	if sp.Parent != nil {
		return sp.Parent.Name
	}
	return sp.Name
}

// onBehalfOf is the client a command runs for: a script's caller for the
// script client, else c itself (Redis's server.current_client).
func (c *Client) onBehalfOf() *Client {
	if c.scriptCaller != nil && c.tx.inScript {
		return c.scriptCaller
	}
	return c
}

// trackingInvalidateWritten invalidates the keys a write command changed
// (with the command's slots locked, from propagateEffects).
func (c *Client) trackingInvalidateWritten(spec *command.Spec, args [][]byte) {
	if c.errored || c.bs.pending != nil {
		return
	}
	by := c.onBehalfOf()
	switch spec.FullName() {
	case "flushdb", "flushall":
		c.srv.trackingFlushed(by)
		return
	}
	c.eachWrittenKey(spec, args, func(key []byte) { c.srv.trackingInvalidate(by, key, true) })
}

// trackingSlotsLost invalidates the tracked keys of the slots in slotSet
// (every slot when nil) that the node just deleted because the slots left
// it (a migration, a failover, a newer configuration). Redis 7.0 deletes
// such keys without telling trackers, whose caches then stay stale.
func (s *Server) trackingSlotsLost(slotSet []int) {
	t := &s.tracking
	if !t.active() {
		return
	}
	inSet := slotMembership(slotSet) // node/watch.go
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range t.keys {
		if inSet == nil || inSet[slots.KeySlot([]byte(k))] {
			t.invalidateLocked(s, nil, k, true)
		}
	}
}
