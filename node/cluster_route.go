package node

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
)

// Routing of keyed commands in cluster mode: Redis 7.0's getNodeByQuery on
// shoal's concurrent keyspace.
//
// Routing runs in two phases. The first reads the lock-free slot table and
// settles every case that does not depend on which keys exist: CROSSSLOT,
// an unbound slot, a cluster that is down, MOVED, a READONLY replica's read,
// and the common "this node serves the slot". When the slot is open — this
// node migrates it (SETSLOT MIGRATING) or imports it (SETSLOT IMPORTING) —
// the answer depends on the keys, and a key can be moved away by MIGRATE at
// any moment; so the second phase, routeLocked, decides again from a fresh
// table with the slot's lock held, and the command then runs under that
// same lock: a key found present cannot leave before the command is done.
// The second phase also runs when the table changed between the first
// phase and the lock (the dispatcher compares c.routeTable): a command
// admitted on an old table cannot write to a slot that flipped meanwhile,
// which is what makes the atomic migration's flip (taken under the slots'
// locks, package migrate) lose no write.

// clusterRedirect is why a keyed command cannot run here.
type clusterRedirect int

const (
	routeHere clusterRedirect = iota
	routeCrossSlot
	routeUnbound
	routeDown
	routeDownReadOnly
	routeMoved
	routeAsk
	routeTryAgain
	// routeDataLost: this master restarted without its data and waits for
	// a replica holding it to take over (node/datalost.go).
	routeDataLost
	// routeCheckKeys: the slot is open; routeLocked decides under the
	// slot's lock.
	routeCheckKeys
)

// routeRequest is what routing needs to know about a request besides its
// keys: one command, or a transaction's queue at EXEC.
type routeRequest struct {
	write   bool // some command of the request writes
	asking  bool // the client sent ASKING, or the command has the asking flag (RESTORE-ASKING)
	migrate bool // MIGRATE: served locally on an open slot whatever keys exist
	// pubsubShard: SSUBSCRIBE/SUNSUBSCRIBE/SPUBLISH, served by the owner's
	// replicas too (READONLY or not) and governed by
	// cluster-allow-pubsubshard-when-down (Redis's is_pubsubshard)
	pubsubShard bool
}

// commandRoute describes one command for routing.
func (c *Client) commandRoute(spec *command.Spec, args [][]byte) routeRequest {
	return routeRequest{
		write:       c.srv.commandWrites(spec, args),
		asking:      c.asking || spec.Flags&command.FlagAsking != 0,
		migrate:     spec.FullName() == "migrate",
		pubsubShard: isShardPubsub(spec),
	}
}

// isShardPubsub reports whether spec is SSUBSCRIBE, SUNSUBSCRIBE or
// SPUBLISH: the only pubsub commands with (not_key) key specs, whose shard
// channels are routed like keys.
func isShardPubsub(spec *command.Spec) bool {
	return spec.Flags&command.FlagPubsub != 0 && len(spec.KeySpecs) > 0
}

// commandWrites reports whether a command counts as a write for routing:
// a READONLY replica redirects a script declared to write to its master
// instead of refusing it (commandFlags).
func (s *Server) commandWrites(spec *command.Spec, args [][]byte) bool {
	return s.commandFlags(spec, args)&command.FlagWrite != 0
}

// commandFlags returns a command's flags as Redis's getCommandFlags does:
// EVAL, EVALSHA, FCALL and their _RO forms take write, denyoom and stale
// from the script's declared flags (scriptFlagsToCmdFlags: write unless
// no-writes, denyoom unless allow-oom or no-writes, stale with
// allow-stale); an EVAL script without a shebang, an unknown script or
// function keep the command's own flags.
func (s *Server) commandFlags(spec *command.Spec, args [][]byte) command.CmdFlag {
	flags := spec.Flags
	if len(args) < 2 || !isScriptCall(spec) {
		return flags
	}
	var sf scriptFlags
	switch spec.FullName() {
	case "eval", "eval_ro":
		if sc := s.tx.scripts.lookup(sha1Hex(args[1])); sc != nil {
			sf = sc.flags
		} else if f, _, errMsg := parseShebang(args[1]); errMsg == "" {
			sf = f
		} else {
			return flags
		}
	case "evalsha", "evalsha_ro":
		sc := s.tx.scripts.lookup(strings.ToLower(string(args[1])))
		if len(args[1]) != 40 || sc == nil {
			return flags
		}
		sf = sc.flags
	case "fcall", "fcall_ro":
		fe := &s.tx.functions
		fe.mu.Lock()
		fi := fe.funcs[strings.ToLower(string(args[1]))]
		fe.mu.Unlock()
		if fi == nil {
			return flags
		}
		sf = fi.flags
	default:
		return flags
	}
	if sf&sfCompat != 0 {
		return flags
	}
	flags &^= command.FlagStale | command.FlagDenyOOM | command.FlagWrite
	if sf&(sfAllowOOM|sfNoWrites) == 0 {
		flags |= command.FlagDenyOOM
	}
	if sf&sfNoWrites == 0 {
		flags |= command.FlagWrite
	}
	if sf&sfAllowStale != 0 {
		flags |= command.FlagStale
	}
	return flags &^ command.FlagMayReplicate
}

// isScriptCall reports whether spec runs a script or function.
func isScriptCall(spec *command.Spec) bool {
	switch spec.FullName() {
	case "eval", "eval_ro", "evalsha", "evalsha_ro", "fcall", "fcall_ro":
		return true
	}
	return false
}

// routeSlots is the lock-free phase. first is the slot of the request's
// first key (Redis reports an unbound first slot before a cross-slot
// request); slotList holds every slot of the request.
func (c *Client) routeSlots(req routeRequest, first uint16, slotList []uint16) (clusterRedirect, uint16, *slots.Node) {
	t := c.srv.cluster.Slots().Load()
	c.routeTable = t
	owner := t.Owner(int(first))
	if owner == nil {
		return routeUnbound, first, nil
	}
	for _, x := range slotList {
		if x != first {
			return routeCrossSlot, first, nil
		}
	}
	if c.importing.Active() && c.importing.Slots.Has(int(first)) {
		return routeHere, first, nil // the stream of an atomic slot migration
	}
	if owner.ID == t.MyID && c.srv.dataLost.Load() {
		return routeDataLost, first, nil // the more telling reason (routeOwner checks it for routeLocked)
	}
	if r := c.routeDownState(t, req); r != routeHere {
		return r, first, nil
	}
	if (owner.ID == t.MyID && t.Migrating(int(first)) != "") || t.Importing(int(first)) != "" {
		return routeCheckKeys, first, owner
	}
	return c.routeOwner(t, req, first, owner)
}

// routeDownState answers a request while the cluster is down: refused, or
// (cluster-allow-reads-when-down) refused for writes only.
func (c *Client) routeDownState(t *slots.Table, req routeRequest) clusterRedirect {
	if t.OK {
		return routeHere
	}
	if req.pubsubShard {
		if !c.srv.cfg.Bool("cluster-allow-pubsubshard-when-down") {
			return routeDown
		}
		return routeHere
	}
	if !c.srv.cfg.Bool("cluster-allow-reads-when-down") {
		return routeDown
	}
	if req.write {
		return routeDownReadOnly
	}
	return routeHere
}

// routeOwner is the end of getNodeByQuery: here when this node owns the
// slot, or when it is a replica of the owner serving a READONLY client's
// read; MOVED otherwise.
func (c *Client) routeOwner(t *slots.Table, req routeRequest, slot uint16, owner *slots.Node) (clusterRedirect, uint16, *slots.Node) {
	if owner.ID == t.MyID {
		if c.srv.dataLost.Load() {
			return routeDataLost, slot, nil
		}
		return routeHere, slot, nil
	}
	if (c.readonly || req.pubsubShard) && !req.write && t.MyMaster != "" && owner.ID == t.MyMaster {
		return routeHere, slot, nil
	}
	return routeMoved, slot, owner
}

// routeLocked is getNodeByQuery for a request on an open slot. keys are all
// of the request's keys in order (repeats included); the caller holds the
// lock of their slot in db 0 (the only database of a cluster).
func (c *Client) routeLocked(req routeRequest, keys [][]byte) (clusterRedirect, uint16, *slots.Node) {
	t := c.srv.cluster.Slots().Load()
	c.routeTable = t
	slot := slots.KeySlot(keys[0])
	owner := t.Owner(int(slot))
	if owner == nil {
		return routeUnbound, slot, nil
	}
	if c.importing.Active() && c.importing.Slots.Has(int(slot)) {
		return routeHere, slot, nil
	}
	migratingTo := ""
	if owner.ID == t.MyID {
		migratingTo = t.Migrating(int(slot))
	}
	importing := migratingTo == "" && t.Importing(int(slot)) != ""
	open := migratingTo != "" || importing
	multiple := false
	missing, existing := 0, 0
	db := c.srv.ks.DB(0)
	for i, k := range keys {
		if i > 0 && !bytes.Equal(k, keys[0]) {
			if slots.KeySlot(k) != slot {
				return routeCrossSlot, slot, nil
			}
			multiple = true
		}
		// Shard channels are not keys: the source serves them until
		// SETSLOT NODE (Redis counts no missing key for them).
		if open && !req.pubsubShard {
			if db.Lookup(k, store.LookupNoTouch|store.LookupNoStats|store.LookupNoExpire) == nil {
				missing++
			} else {
				existing++
			}
		}
	}
	if r := c.routeDownState(t, req); r != routeHere {
		return r, slot, nil
	}
	if open && req.migrate {
		return routeHere, slot, nil
	}
	if migratingTo != "" && missing > 0 {
		if existing > 0 {
			return routeTryAgain, slot, nil
		}
		target, ok := c.srv.cluster.Node(migratingTo)
		if !ok {
			return routeTryAgain, slot, nil
		}
		return routeAsk, slot, &slots.Node{ID: target.ID, IP: target.IP, Port: target.Port, PPort: target.PPort, Hostname: target.Hostname}
	}
	if importing && req.asking {
		if multiple && missing > 0 {
			return routeTryAgain, slot, nil
		}
		return routeHere, slot, nil
	}
	return c.routeOwner(t, req, slot, owner)
}

// redirect writes the error for a command that cannot run here
// (clusterRedirectClient).
func (c *Client) redirect(r clusterRedirect, slot uint16, to *slots.Node) {
	c.Error(c.srv.redirectText(r, slot, to, c.plainPorts()))
}

// redirectText is the error text of a redirect, without the leading "-".
// plain names the target's plaintext port (a plaintext client of a TLS
// cluster, node/cluster_tls.go).
func (s *Server) redirectText(r clusterRedirect, slot uint16, to *slots.Node, plain bool) string {
	switch r {
	case routeCrossSlot:
		return "CROSSSLOT Keys in request don't hash to the same slot"
	case routeUnbound:
		return "CLUSTERDOWN Hash slot not served"
	case routeDown:
		return "CLUSTERDOWN The cluster is down"
	case routeDownReadOnly:
		return "CLUSTERDOWN The cluster is down and only accepts read commands"
	case routeTryAgain:
		return "TRYAGAIN Multiple keys request during rehashing of slot"
	case routeDataLost:
		return msgDataLostSlot
	case routeMoved:
		return fmt.Sprintf("MOVED %d %s:%d", slot, s.preferredEndpoint(to), clientPort(to.Port, to.PPort, plain))
	case routeAsk:
		return fmt.Sprintf("ASK %d %s:%d", slot, s.preferredEndpoint(to), clientPort(to.Port, to.PPort, plain))
	}
	return "ERR routing error " + strconv.Itoa(int(r))
}

// routeCommand is the lock-free phase for the running command, whose key
// positions and slots are in c.keyBuf / c.slotBuf. It writes the redirect
// and returns false when the command must not run here. When the slot is
// open it sets c.routeRecheck: the dispatcher then calls routeCommandLocked
// once it holds the slot's lock. A command being queued in MULTI is
// checked completely here, under a lock of its own (Redis routes queued
// commands too).
func (c *Client) routeCommand(spec *command.Spec, args [][]byte) bool {
	c.routeRecheck = false
	if len(c.slotBuf) == 0 {
		return true
	}
	req := c.commandRoute(spec, args)
	first := c.slotBuf[0] // the first key's slot when there is one slot (hashed once, by commandSlots)
	if len(c.slotBuf) > 1 {
		first = slots.KeySlot(args[c.keyBuf[0]])
	}
	r, slot, to := c.routeSlots(req, first, c.slotBuf)
	switch r {
	case routeHere:
		return true
	case routeCheckKeys:
		if c.multi != nil && !runsInMulti(spec) {
			db := c.srv.ks.DB(0)
			db.Lock(slot)
			r, slot, to = c.routeLocked(req, c.commandKeyArgs(args))
			db.Unlock(slot)
			if r == routeHere {
				return true
			}
			break
		}
		c.routeRecheck = true
		return true
	}
	c.redirect(r, slot, to)
	return false
}

// routeCommandLocked is the second phase, with the command's slot locked.
func (c *Client) routeCommandLocked(spec *command.Spec, args [][]byte) bool {
	c.routeRecheck = false
	r, slot, to := c.routeLocked(c.commandRoute(spec, args), c.commandKeyArgs(args))
	if r == routeHere {
		return true
	}
	c.redirect(r, slot, to)
	return false
}

// commandKeyArgs returns the running command's keys (reusing a buffer).
func (c *Client) commandKeyArgs(args [][]byte) [][]byte {
	keys := c.routeKeys[:0]
	for _, p := range c.keyBuf {
		keys = append(keys, args[p])
	}
	c.routeKeys = keys
	return keys
}

// routeTransaction routes a transaction at EXEC as one request (Redis
// runs getNodeByQuery over the whole queue). On an open slot the keys are
// checked under the slot's lock, which is released before the queue runs:
// a transaction on a slot that is being migrated may see its keys moved
// between the check and the run.
func (c *Client) routeTransaction(m *multiState) bool {
	if c.isMasterLink() {
		return true // a replica applies its master's stream as is (node/replication.go)
	}
	var r clusterRedirect
	var slot uint16
	var to *slots.Node
	var keys [][]byte
	var req routeRequest
	if !m.rescan {
		// The keys' slots as admit computed them when it queued each
		// command (multiState.noteSlots): no key is extracted or hashed
		// again unless a slot is open.
		if len(m.slots) == 0 {
			return true
		}
		req = routeRequest{asking: c.asking}
		for _, qc := range m.queue {
			req.write = req.write || c.srv.commandWrites(qc.spec, qc.args)
		}
		r, slot, to = c.routeSlots(req, m.firstSlot, m.slots)
		if r == routeCheckKeys {
			keys, _ = c.transactionRoute(m.queue)
		}
	} else {
		keys, req = c.transactionRoute(m.queue)
		if len(keys) == 0 {
			return true
		}
		all := make([]uint16, len(keys))
		for i, k := range keys {
			all[i] = slots.KeySlot(k)
		}
		r, slot, to = c.routeSlots(req, all[0], all)
	}
	if r == routeCheckKeys {
		db := c.srv.ks.DB(0)
		db.Lock(slot)
		r, slot, to = c.routeLocked(req, keys)
		db.Unlock(slot)
	}
	if r == routeHere {
		return true
	}
	c.redirect(r, slot, to)
	return false
}

// transactionRoute returns a transaction's keys and what routing needs to
// know about it.
func (c *Client) transactionRoute(queue []queuedCommand) ([][]byte, routeRequest) {
	var keys [][]byte
	req := routeRequest{asking: c.asking}
	for _, qc := range queue {
		pos, _ := command.Keys(qc.spec, qc.args, nil)
		if isShardPubsub(qc.spec) {
			// Shard channels are routed with the keys, as by Redis's
			// getNodeByQuery: SPUBLISH of another slot's channel makes
			// the transaction CROSSSLOT.
			pos = shardChannelPositions(qc.spec, qc.args, pos)
			req.pubsubShard = true
		}
		for _, p := range pos {
			keys = append(keys, qc.args[p])
		}
		req.write = req.write || c.srv.commandWrites(qc.spec, qc.args)
	}
	return keys, req
}

// routeTransactionLocked runs with the transaction's slots locked, just
// before its commands: if the slot table changed since routeTransaction
// (a slot flipped in between, by atomic migration or SETSLOT), the
// transaction is routed again and answered with the redirect instead of
// running on a slot this node no longer serves.
func (c *Client) routeTransactionLocked(queue []queuedCommand) bool {
	if c.srv.cluster == nil || c.isMasterLink() || c.srv.cluster.Slots().Load() == c.routeTable {
		return true
	}
	keys, req := c.transactionRoute(queue)
	if len(keys) == 0 {
		return true
	}
	r, slot, to := c.routeLocked(req, keys)
	if r == routeHere {
		return true
	}
	c.redirect(r, slot, to)
	return false
}

// endCommandAsking clears the ASKING flag after a command, as Redis's
// resetClient: it lasts for the one command that follows ASKING, or until
// the end of a transaction opened in the meantime.
func (c *Client) endCommandAsking() {
	if c.askingJustSet {
		c.askingJustSet = false
		return
	}
	if c.multi == nil {
		c.asking = false
	}
}

// redirectBlockedClients is clusterRedirectBlockedClientIfNeeded, run when
// the slot table changes: a client blocked on keys whose slot is no longer
// served here (nor imported) is answered MOVED, or CLUSTERDOWN when the
// slot is unbound or the cluster is down.
func (s *Server) redirectBlockedClients(t *slots.Table) {
	reg := s.blocking()
	if reg.waiting.Load() == 0 {
		return
	}
	reg.redirectWaiters(func(w *blockWaiter) string {
		if !t.OK {
			return s.redirectText(routeDown, 0, nil, false)
		}
		if len(w.keys) == 0 {
			return ""
		}
		slot := slots.KeySlot([]byte(w.keys[0]))
		owner := t.Owner(int(slot))
		if owner == nil {
			return s.redirectText(routeUnbound, slot, nil, false)
		}
		if owner.ID == t.MyID || t.Importing(int(slot)) != "" {
			return ""
		}
		if w.c.readonly && t.MyMaster != "" && owner.ID == t.MyMaster {
			if spec := w.c.lastCmd.Load(); spec != nil && spec.Flags&command.FlagWrite == 0 {
				return ""
			}
		}
		return s.redirectText(routeMoved, slot, owner, w.c.plainPorts())
	})
}
