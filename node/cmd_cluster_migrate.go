package node

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/resp"

	"github.com/shoal-db/shoal/gossip"
	"github.com/shoal-db/shoal/migrate"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
	"go.uber.org/zap"
)

// Atomic slot migration's commands (package migrate owns the logic):
// CLUSTER MIGRATESLOTS, GETSLOTMIGRATIONS and CANCELSLOTMIGRATIONS (Valkey
// 9's interface, a shoal extension of the Redis 7.0 command set), and the
// internal CLUSTER IMPORTSLOTS the source sends on its stream to the
// target. migrationNode is the node's side of migrate.Source/Target: slot
// locks, slot images, the effect feed, the ownership flip.

func clusterMigrateHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"cluster|migrateslots":         clusterOnly(cmdClusterMigrateSlots),
		"cluster|getslotmigrations":    clusterOnly(cmdClusterGetSlotMigrations),
		"cluster|cancelslotmigrations": clusterOnly(cmdClusterCancelSlotMigrations),
		"cluster|importslots":          clusterOnly(cmdClusterImportSlots),
	}
}

// clusterExtensionMeta is the metadata of the CLUSTER subcommands shoal
// adds to Redis 7.0's (newCommandTable attaches them to the container).
func clusterExtensionMeta() []*command.Spec {
	return []*command.Spec{
		{Name: "migrateslots", Arity: -6, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading,
			Doc: command.NewDoc("Migrate slots to another node by atomic slot migration", "9.0.0", "cluster", "O(N) where N is the total number of slots given")},
		{Name: "getslotmigrations", Arity: 2, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading,
			Tips: []string{"nondeterministic_output"},
			Doc:  command.NewDoc("Get the in-progress and recent atomic slot migrations", "9.0.0", "cluster", "O(N) where N is the number of jobs listed")},
		{Name: "cancelslotmigrations", Arity: 2, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading,
			Doc: command.NewDoc("Cancel the atomic slot migrations started on this node", "9.0.0", "cluster", "O(N) where N is the number of jobs cancelled")},
		{Name: "importslots", Arity: -4, Flags: command.FlagAdmin | command.FlagStale | command.FlagNoAsyncLoading,
			Doc: command.NewDoc("Internal command of atomic slot migration, sent by the source node", "9.0.0", "cluster", "Depends on the action")},
	}
}

// clusterExtensionHelpLines are CLUSTER HELP's lines for the subcommands
// shoal adds to Redis 7.0's, after Redis's own and each marked as such.
var clusterExtensionHelpLines = []string{
	"MIGRATESLOTS SLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...] NODE <node-id> [SLOTSRANGE ... NODE <node-id> ...]",
	"    (shoal extension, as Valkey 9) Move the slots and their keys to <node-id> atomically: the target",
	"    receives a snapshot of the slots, then the writes to them, and takes them over in one step.",
	"GETSLOTMIGRATIONS",
	"    (shoal extension, as Valkey 9) List the running and recent slot migrations with their progress.",
	"CANCELSLOTMIGRATIONS",
	"    (shoal extension, as Valkey 9) Cancel the slot migrations started on this node.",
	"SLOT-STATS SLOTSRANGE <start slot> <end slot> | ORDERBY <metric> [LIMIT <limit>] [ASC|DESC]",
	"    (shoal extension, as Valkey 8) Return per-slot statistics: keys, CPU time, network bytes.",
}

// withClusterExtensions adds shoal's CLUSTER subcommands to the metadata
// (the command-table test compares only command.AllMeta with Redis 7.0).
func withClusterExtensions(all []*command.Spec) []*command.Spec {
	for _, spec := range all {
		if spec.Name == "cluster" {
			for _, sub := range clusterExtensionMeta() {
				spec.Subcommands[sub.Name] = sub
			}
		}
	}
	return all
}

// newMigrations creates the server's migration manager (cluster mode).
func (s *Server) newMigrations() *migrate.Manager {
	n := &migrationNode{s: s}
	return migrate.NewManager(n, n, s.log.Named("migrate"), migrate.Options{})
}

// cmdClusterMigrateSlots is CLUSTER MIGRATESLOTS SLOTSRANGE start end
// [start end ...] NODE id [SLOTSRANGE ... NODE id ...].
func cmdClusterMigrateSlots(c *Client, args [][]byte) {
	specs, err := migrate.ParseMigrateSlots(args[2:])
	if err != nil {
		c.Error(err.Error())
		return
	}
	c.clusterReply(c.srv.migrations.Start(specs))
}

// cmdClusterGetSlotMigrations lists the jobs, oldest first, one map each.
func cmdClusterGetSlotMigrations(c *Client, args [][]byte) {
	jobs := c.srv.migrations.Jobs()
	c.Array(len(jobs))
	for _, j := range jobs {
		c.Map(16)
		c.BulkString("name")
		c.BulkString(j.Name)
		c.BulkString("operation")
		c.BulkString(j.Operation)
		c.BulkString("slot_ranges")
		c.BulkString(j.SlotRanges)
		c.BulkString("source_node")
		c.BulkString(j.Source)
		c.BulkString("target_node")
		c.BulkString(j.Target)
		c.BulkString("create_time")
		c.Int(j.CreateTime)
		c.BulkString("last_update_time")
		c.Int(j.LastUpdateTime)
		c.BulkString("state")
		c.BulkString(j.State)
		c.BulkString("message")
		c.BulkString(j.Message)
		c.BulkString("slots")
		c.Int(j.SlotsTotal)
		c.BulkString("slots_snapshotted")
		c.Int(j.SlotsImaged)
		c.BulkString("keys_snapshotted")
		c.Int(j.Keys)
		// of keys_total, counted when the images began (writes since may
		// change it); bytes_snapshotted: argument bytes of the images sent.
		c.BulkString("keys_total")
		c.Int(j.KeysTotal)
		c.BulkString("bytes_snapshotted")
		c.Int(j.ImageBytes)
		c.BulkString("effects_streamed")
		c.Int(j.Effects)
		c.BulkString("write_pause_ms")
		c.Int(j.PauseMillis)
	}
}

func cmdClusterCancelSlotMigrations(c *Client, args [][]byte) {
	c.srv.migrations.Cancel()
	c.OK()
}

// cmdClusterImportSlots is the target's side of the stream:
// BEGIN name source-id start end [start end ...] | FINISH name |
// ABORT name | FLUSH name.
func cmdClusterImportSlots(c *Client, args [][]byte) {
	m := c.srv.migrations
	action, name := strings.ToLower(string(args[2])), string(args[3])
	if action == "begin" {
		if len(args) < 7 {
			c.ErrSyntax()
			return
		}
		list, err := migrate.ParseImportRanges(args[5:])
		if err != nil {
			c.Error(err.Error())
			return
		}
		if c.importing.Active() {
			m.AbortImport(c.importing, "a new import began on the same connection")
		}
		imp, err := m.BeginImport(name, string(args[4]), list)
		if err != nil {
			c.Error(err.Error())
			return
		}
		c.importing = imp
		c.OK()
		return
	}
	if len(args) != 4 {
		c.ErrSyntax()
		return
	}
	imp := c.importing
	if !imp.Active() || imp.Name() != name {
		c.Error("ERR No such active slot import on this connection")
		return
	}
	switch action {
	case "finish":
		c.importing = nil
		c.clusterReply(m.FinishImport(imp))
	case "abort":
		c.importing = nil
		m.AbortImport(imp, "aborted by the source")
		c.OK()
	case "flush":
		m.FlushImport(imp)
		c.OK()
	default:
		c.ErrSyntax()
	}
}

// holdClusterBus keeps the cluster bus from acting on peers' messages
// while EXEC runs a transaction holding CLUSTER commands (redis-cli's
// SetSlotOwner: DELSLOTS, ADDSLOTS, BUMPEPOCH), so that it is atomic with
// respect to gossip as in Redis. It returns nil when there is nothing to
// hold. While held, c.tx.busHeld tells DEBUG SLEEP not to take it again.
func (c *Client) holdClusterBus(queue []queuedCommand) (release func()) {
	if c.srv.cluster == nil || c.tx.busHeld.Load() {
		return nil
	}
	for _, qc := range queue {
		if qc.spec.Parent != nil && qc.spec.Parent.Name == "cluster" {
			return c.holdBus()
		}
	}
	return nil
}

// holdBus holds the cluster bus for c (see holdClusterBus); nil when there
// is no bus or c holds it already.
func (c *Client) holdBus() (release func()) {
	if c.srv.cluster == nil || c.tx.busHeld.Load() {
		return nil
	}
	unhold := c.srv.cluster.Hold()
	c.tx.busHeld.Store(true)
	return func() {
		c.tx.busHeld.Store(false)
		unhold()
	}
}

// importConnClosed aborts the import a closing connection was streaming.
func (s *Server) importConnClosed(c *Client) {
	if c.importing.Active() && s.migrations != nil {
		s.migrations.AbortImport(c.importing, "the source's connection closed")
	}
}

// migrationNode implements migrate.Source and migrate.Target.
type migrationNode struct{ s *Server }

func (n *migrationNode) MyID() string { return n.s.cluster.MyID() }

func (n *migrationNode) OwnsSlot(slot int) bool {
	t := n.s.cluster.Slots().Load()
	o := t.Owner(slot)
	return o != nil && o.ID == t.MyID && t.MyMaster == ""
}

func (n *migrationNode) MasterAddr(id string) (string, error) {
	info, ok := n.s.cluster.Node(id)
	if !ok {
		return "", fmt.Errorf("ERR Unknown node %s", id)
	}
	if !info.IsMaster() {
		return "", errors.New("ERR Target node is not a master")
	}
	return net.JoinHostPort(info.IP, strconv.Itoa(info.Port)), nil
}

// Dial connects to a node's client port and authenticates with
// masteruser/masterauth when set (the credentials a replica uses).
func (n *migrationNode) Dial(addr string) (net.Conn, error) {
	conn, err := n.s.dialNode(addr, 5*time.Second) // node/tls.go: TLS in a TLS cluster
	if err != nil {
		return nil, err
	}
	pass := n.s.cfg.String("masterauth")
	if pass == "" {
		return conn, nil
	}
	argv := [][]byte{[]byte("AUTH")}
	if user := n.s.cfg.String("masteruser"); user != "" {
		argv = append(argv, []byte(user))
	}
	argv = append(argv, []byte(pass))
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(resp.AppendCommand(nil, argv...)); err != nil {
		_ = conn.Close()
		return nil, err
	}
	line, err := resp.NewReplyReader(conn, 4096).ReadLine()
	if err != nil || !strings.HasPrefix(line, "+OK") {
		_ = conn.Close()
		return nil, fmt.Errorf("AUTH with masterauth failed: %q %v", strings.TrimSpace(line), err)
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, nil
}

func (n *migrationNode) LockSlots(list []uint16)   { n.s.ks.DB(0).LockSlots(list) }
func (n *migrationNode) UnlockSlots(list []uint16) { n.s.ks.DB(0).UnlockSlots(list) }

func (n *migrationNode) AddEffectFeed(f migrate.Feed)    { n.s.AddEffectFeed(f) }
func (n *migrationNode) RemoveEffectFeed(f migrate.Feed) { n.s.RemoveEffectFeed(f) }

// EffectSlot finds an effect command's slot with the command table's key
// specs.
func (n *migrationNode) EffectSlot(argv [][]byte) (int, bool) {
	// An effect the server built has the command's own name; a command
	// propagated as the client sent it may have its rename-command name.
	spec, unknownSub := n.s.table.lookupOwn(argv)
	if spec == nil {
		spec, unknownSub = n.s.table.lookup(argv)
	}
	if spec == nil || unknownSub {
		return -1, false
	}
	switch spec.FullName() {
	case "flushall", "flushdb":
		return -1, true
	}
	pos, err := command.Keys(spec, argv, nil)
	if err != nil || len(pos) == 0 {
		return -1, false
	}
	return int(slots.KeySlot(argv[pos[0]])), false
}

func (n *migrationNode) GiveSlots(list []int, to string) error {
	return n.s.cluster.Do(func(st *gossip.State) error { return st.GiveSlots(list, to) })
}

func (n *migrationNode) TakeSlots(list []int) error {
	return n.s.cluster.Do(func(st *gossip.State) error { return st.TakeSlots(list) })
}

func (n *migrationNode) DropSlots(list []int) { n.s.deleteSlotKeys(list) }

// deleteSlotKeys deletes db 0's keys in the given slots and feeds the
// deletions as DELs, as Redis's delKeysInSlot propagates them: the node's
// replicas drop the keys too. Keys already logically expired go without a
// DEL. Watchers of the slots' keys are touched. It returns how many keys
// were deleted.
func (s *Server) deleteSlotKeys(list []int) int64 {
	db := s.ks.DB(0)
	var keys [][]byte
	var n int64
	for _, slot := range list {
		if db.SlotSize(uint16(slot)) == 0 {
			continue
		}
		one := []uint16{uint16(slot)}
		db.LockSlots(one)
		keys = keys[:0]
		db.EachInSlot(uint16(slot), func(e *store.Entry) bool {
			keys = append(keys, []byte(e.Key()))
			return true
		})
		for i := 0; i < len(keys); i += imageMSETKeys {
			batch := keys[i:min(i+imageMSETKeys, len(keys))]
			for _, k := range batch {
				db.Delete(k)
			}
			s.propagate(0, [][][]byte{append([][]byte{[]byte("DEL")}, batch...)})
		}
		db.UnlockSlots(one)
		n += int64(len(keys)) + db.FlushSlot(uint16(slot))
	}
	s.tx.watch.touchFlushed(0, list) // node/watch.go
	s.trackingSlotsLost(list)        // node/tracking.go
	return n
}

// slotsMovedOut acts on slots this master lost to the master it was
// migrating them to (gossip.Change.MovedOutSlots): the keys left in them
// stay, for the migration or redis-cli --cluster fix to move (the slots are
// still open here), but clients tracking them are told to forget them, as
// this node no longer serves them.
func (s *Server) slotsMovedOut(list []int) {
	db := s.ks.DB(0)
	var keys int64
	for _, slot := range list {
		keys += db.SlotSize(uint16(slot))
	}
	s.trackingSlotsLost(list) // node/tracking.go
	if keys > 0 {
		s.log.Warn("cluster: kept the keys of slots lost to the master they were migrating to; the migration (or redis-cli --cluster fix) moves them",
			zap.Int("slots", len(list)), zap.Int("first", list[0]), zap.Int64("keys", keys))
	}
}

func (n *migrationNode) CanImport(source string, list []int) error {
	t := n.s.cluster.Slots().Load()
	if t.MyMaster != "" {
		return errors.New("ERR Please use SETSLOT only with masters.")
	}
	info, ok := n.s.cluster.Node(source)
	if !ok {
		return fmt.Errorf("ERR I don't know about node %s", source)
	}
	if !info.IsMaster() {
		return errors.New("ERR Target node is not a master")
	}
	for _, s := range list {
		if o := t.Owner(s); o != nil && o.ID == t.MyID {
			return fmt.Errorf("ERR I'm already the owner of hash slot %d", s)
		}
	}
	return nil
}

// Slot images. A key is rebuilt by RESTORE ... REPLACE ABSTTL with its
// DUMP payload (package rdb: every type and encoding, byte-compatible with
// Redis), except a string without TTL (MSETs of up to imageMSETKeys keys)
// and a collection of more than imageChunkElems elements or a
// string longer than imageChunkBytes, which is rebuilt by bounded commands
// (RPUSH/SADD/HSET/ZADD chunks, SET + APPEND) so that no single command of
// the stream is huge, followed by PEXPIREAT when it has a TTL.
const (
	imageChunkElems = 1024
	imageChunkBytes = 1 << 20
	imageMSETKeys   = 256
)

func (n *migrationNode) KeysInSlots(list []int) int64 {
	var total int64
	for _, slot := range list {
		total += int64(n.s.countKeysInSlot(slot))
	}
	return total
}

func (n *migrationNode) SlotImage(slot uint16, emit func(argv ...[][]byte)) int {
	keys := 0
	var payload []byte
	enc := n.s.rdbEncoder()
	// Strings without a TTL go as MSETs of many keys: one command for
	// the target to run instead of one RESTORE each (a string's encoding
	// follows from its value either way).
	mset := [][]byte{[]byte("MSET")}
	msetBytes := 0
	flushMSET := func() {
		if len(mset) > 1 {
			emit(mset)
			clear(mset[1:])
			mset = mset[:1]
			msetBytes = 0
		}
	}
	n.s.ks.DB(0).EachInSlot(slot, func(e *store.Entry) bool {
		keys++
		key := []byte(e.Key())
		if e.Type() == store.TypeString && e.ExpireAt() == 0 && len(e.Bytes()) <= imageChunkBytes {
			v := e.Bytes()
			mset = append(mset, key, append([]byte(nil), v...))
			msetBytes += len(key) + len(v)
			if len(mset) > 2*imageMSETKeys || msetBytes >= imageChunkBytes {
				flushMSET()
			}
			return true
		}
		if !imageChunked(e) {
			payload = enc.AppendPayload(payload[:0], e)
			ttl := []byte("0")
			if at := e.ExpireAt(); at != 0 {
				ttl = strconv.AppendInt(nil, at, 10)
			}
			emit([][]byte{[]byte("RESTORE"), key, ttl, payload, []byte("REPLACE"), []byte("ABSTTL")})
			return true
		}
		imageChunks(e, key, emit)
		if at := e.ExpireAt(); at != 0 {
			emit([][]byte{[]byte("PEXPIREAT"), key, strconv.AppendInt(nil, at, 10)})
		}
		return true
	})
	flushMSET()
	return keys
}

// imageChunked reports whether a key is imaged by chunks rather than as
// one RESTORE payload (streams always go as a payload).
func imageChunked(e *store.Entry) bool {
	switch e.Type() {
	case store.TypeString:
		return len(e.Bytes()) > imageChunkBytes
	case store.TypeList, store.TypeHash, store.TypeSet, store.TypeZSet:
		return e.Value().Len() > imageChunkElems
	}
	return false
}

// imageChunks emits the commands that rebuild a big value.
func imageChunks(e *store.Entry, key []byte, emit func(argv ...[][]byte)) {
	var argv [][]byte
	size := 0
	start := func(cmd string) {
		argv = append(argv[:0], []byte(cmd), key)
		size = 0
	}
	flush := func(cmd string) {
		if len(argv) > 2 {
			emit(argv)
		}
		start(cmd)
	}
	add := func(cmd string, parts ...[]byte) {
		for _, p := range parts {
			argv = append(argv, append([]byte(nil), p...))
			size += len(p)
		}
		if len(argv)-2 >= imageChunkElems || size >= imageChunkBytes {
			flush(cmd)
		}
	}
	switch e.Type() {
	case store.TypeString:
		b := e.Bytes()
		cmd := "SET"
		for len(b) > 0 {
			k := min(len(b), imageChunkBytes)
			emit([][]byte{[]byte(cmd), key, b[:k]})
			b = b[k:]
			cmd = "APPEND"
		}
		return
	case store.TypeList:
		start("RPUSH")
		for v := range e.List().All() {
			add("RPUSH", v)
		}
		flush("RPUSH")
	case store.TypeSet:
		start("SADD")
		for v := range e.Set().All() {
			add("SADD", v)
		}
		flush("SADD")
	case store.TypeHash:
		start("HSET")
		for f, v := range e.Hash().All() {
			add("HSET", f, v)
		}
		flush("HSET")
	case store.TypeZSet:
		start("ZADD")
		e.ZSet().Each(false, func(member []byte, score float64) bool {
			add("ZADD", formatScore(score), member)
			return true
		})
		flush("ZADD")
	}
}

// formatScore writes a score so that ZADD parses back the same float64.
func formatScore(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64)
}
