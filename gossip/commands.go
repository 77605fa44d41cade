package gossip

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/strconvx"
	"go.uber.org/zap"
)

// The command methods below implement the state side of the CLUSTER
// subcommands. Each returns nil for +OK, or an error whose Error() is the
// exact reply text Redis 7.0 sends (with its "ERR " prefix). Nothing changes
// when an error is returned. Arguments are the raw command arguments after
// the subcommand name, so parse errors match Redis too.

var (
	errNotInteger = errors.New("ERR value is not an integer or out of range")
	errSyntax     = errors.New("ERR syntax error")
)

func errorf(format string, args ...any) error {
	return errors.New("ERR " + fmt.Sprintf(format, args...))
}

// Meet is CLUSTER MEET ip port [cport] (cport nil: port+10000). It starts
// a handshake: the node appears with the handshake flag and a made-up id
// until its PONG reveals the real one.
func (s *State) Meet(ipArg, portArg, cportArg []byte) error {
	port, ok := strconvx.ParseInt(portArg)
	if !ok {
		return errorf("Invalid TCP base port specified: %s", portArg)
	}
	cport := port + 10000
	if cportArg != nil {
		if cport, ok = strconvx.ParseInt(cportArg); !ok {
			return errorf("Invalid TCP bus port specified: %s", cportArg)
		}
	}
	ip := net.ParseIP(string(ipArg))
	if ip == nil || port <= 0 || port > 65535 || cport <= 0 || cport > 65535 {
		return errorf("Invalid node address specified: %s:%s", ipArg, portArg)
	}
	norm := ip.String()
	if s.handshakeInProgress(norm, int(port), int(cport)) {
		return nil // EAGAIN: Redis answers OK
	}
	n := s.newNode(s.randomID(), FlagHandshake|FlagMeet)
	n.ip, n.port, n.cport = norm, int(port), int(cport)
	s.addNode(n)
	s.out.Join = append(s.out.Join, n.addr())
	s.sendPing(n, MsgMeet, n.id)
	n.handshakeTx = 1
	return nil
}

// checkSlots is checkSlotAssignmentsOrReply.
func (s *State) checkSlots(seen *[slots.Count]uint8, del bool, start, end int) error {
	for j := start; j <= end; j++ {
		if del && s.owner.get(j) == nil {
			return errorf("Slot %d is already unassigned", j)
		} else if !del && s.owner.get(j) != nil {
			return errorf("Slot %d is already busy", j)
		}
		seen[j]++
		if seen[j] == 2 {
			return errorf("Slot %d specified multiple times", j)
		}
	}
	return nil
}

// applySlots binds (ADDSLOTS) or unbinds (DELSLOTS) the slots seen marks.
//
// A slot DELSLOTS takes from another master and ADDSLOTS then gives this
// one is handed off from that master, as at the end of an import (see
// noteHandoff): redis-cli's fix makes a master the owner of a slot two
// masters hold keys of with MULTI, DELSLOTS, ADDSLOTS, BUMPEPOCH, EXEC on
// it, then moves the other's keys over. The bump is blind to an epoch the
// other master took a moment earlier (it was made the owner of a slot
// before this one), so a ping it sent before its own DELSLOTS claims the
// slot under a greater epoch: Redis would give the slot back, delete the
// keys just made this master's, and end with each master believing the
// other owns the slot (CI saw --cluster fix leave one slot unclaimed so).
func (s *State) applySlots(seen *[slots.Count]uint8, del bool) {
	now := s.clock.Now()
	for j := 0; j < slots.Count; j++ {
		if seen[j] == 0 {
			continue
		}
		if s.importing.get(j) != nil {
			s.importing.set(j, nil)
			s.touchTable()
		}
		if del {
			if prev := s.owner.get(j); prev != s.myself {
				if s.unbound == nil {
					s.unbound = map[int]handoff{}
				}
				s.unbound[j] = handoff{from: prev, until: now.Add(s.opts.NodeTimeout)}
			}
			s.delSlot(j)
			continue
		}
		from, ok := s.unbound[j]
		s.addSlot(s.myself, j)
		if ok && now.Before(from.until) {
			s.noteHandoff(j, from.from)
		}
	}
	s.todoUpdateState = true
	s.save(false)
	s.afterStep()
}

// AddSlots is CLUSTER ADDSLOTS slot... ; DelSlots is CLUSTER DELSLOTS.
func (s *State) AddSlots(args [][]byte) error { return s.slotsCmd(args, false) }

// DelSlots is CLUSTER DELSLOTS slot...
func (s *State) DelSlots(args [][]byte) error { return s.slotsCmd(args, true) }

func (s *State) slotsCmd(args [][]byte, del bool) error {
	list := make([]int, len(args))
	for i, a := range args {
		v, err := slots.ParseSlot(a)
		if err != nil {
			return err
		}
		list[i] = v
	}
	var seen [slots.Count]uint8
	for _, v := range list {
		if err := s.checkSlots(&seen, del, v, v); err != nil {
			return err
		}
	}
	s.applySlots(&seen, del)
	return nil
}

// AddSlotsRange is CLUSTER ADDSLOTSRANGE start end [start end ...].
func (s *State) AddSlotsRange(args [][]byte) error { return s.rangesCmd(args, false) }

// DelSlotsRange is CLUSTER DELSLOTSRANGE start end [start end ...].
func (s *State) DelSlotsRange(args [][]byte) error { return s.rangesCmd(args, true) }

func (s *State) rangesCmd(args [][]byte, del bool) error {
	if len(args) == 0 || len(args)%2 != 0 {
		name := "addslotsrange"
		if del {
			name = "delslotsrange"
		}
		return errorf("wrong number of arguments for 'cluster|%s' command", name)
	}
	var seen [slots.Count]uint8
	for i := 0; i < len(args); i += 2 {
		start, err := slots.ParseSlot(args[i])
		if err != nil {
			return err
		}
		end, err := slots.ParseSlot(args[i+1])
		if err != nil {
			return err
		}
		if start > end {
			return errorf("start slot number %d is greater than end slot number %d", start, end)
		}
		if err := s.checkSlots(&seen, del, start, end); err != nil {
			return err
		}
	}
	s.applySlots(&seen, del)
	return nil
}

// FlushSlots is CLUSTER FLUSHSLOTS; dbEmpty tells whether db 0 has no key.
func (s *State) FlushSlots(dbEmpty bool) error {
	if !dbEmpty {
		return errors.New("ERR DB must be empty to perform CLUSTER FLUSHSLOTS.")
	}
	s.delNodeSlots(s.myself)
	s.todoUpdateState = true
	s.save(false)
	s.afterStep()
	return nil
}

// SetSlot is CLUSTER SETSLOT slot IMPORTING|MIGRATING id / STABLE / NODE id.
// args are the arguments after SETSLOT. keysInSlot counts this node's keys
// in a slot; it is called with the Bus lock held and must not call the Bus.
func (s *State) SetSlot(args [][]byte, keysInSlot func(slot int) int) error {
	if s.myself.isSlave() {
		return errors.New("ERR Please use SETSLOT only with masters.")
	}
	if len(args) < 2 {
		return errSetSlotAction
	}
	slot, err := slots.ParseSlot(args[0])
	if err != nil {
		return err
	}
	action := string(args[1])
	switch {
	case equalFold(action, "migrating") && len(args) == 3:
		if s.owner.get(slot) != s.myself {
			return errorf("I'm not the owner of hash slot %d", slot)
		}
		n := s.lookup(string(args[2]))
		if n == nil {
			return errorf("I don't know about node %s", args[2])
		}
		if n.isSlave() {
			return errors.New("ERR Target node is not a master")
		}
		s.migrating.set(slot, n)
		delete(s.handoffs, slot) // moving it on: its next owner's claim must win
	case equalFold(action, "importing") && len(args) == 3:
		if s.owner.get(slot) == s.myself {
			return errorf("I'm already the owner of hash slot %d", slot)
		}
		n := s.lookup(string(args[2]))
		if n == nil {
			return errorf("I don't know about node %s", args[2])
		}
		if n.isSlave() {
			return errors.New("ERR Target node is not a master")
		}
		s.importing.set(slot, n)
	case equalFold(action, "stable") && len(args) == 2:
		s.importing.set(slot, nil)
		s.migrating.set(slot, nil)
	case equalFold(action, "node") && len(args) == 3:
		n := s.lookup(string(args[2]))
		if n == nil {
			return errorf("Unknown node %s", args[2])
		}
		if n.isSlave() {
			return errors.New("ERR Target node is not a master")
		}
		keys := 0
		if keysInSlot != nil {
			keys = keysInSlot(slot)
		}
		if s.owner.get(slot) == s.myself && n != s.myself && keys != 0 {
			return errorf("Can't assign hashslot %d to a different node while I still hold keys for this hash slot.", slot)
		}
		if keys == 0 && s.migrating.get(slot) != nil {
			s.migrating.set(slot, nil)
		}
		wasMine := s.owner.get(slot) == s.myself
		s.delSlot(slot)
		s.addSlot(n, slot)
		if wasMine && n != s.myself && s.myself.numSlots == 0 && s.opts.AllowReplicaMigration {
			s.log.Warn("configuration change detected, reconfiguring myself as a replica", zap.String("master", n.id))
			s.setMyMaster(n)
			s.save(true)
		}
		if n == s.myself && s.importing.get(slot) != nil {
			s.bumpEpochWithoutConsensus()
			s.noteHandoff(slot, s.importing.get(slot))
			s.importing.set(slot, nil)
			s.BroadcastPong()
		}
	default:
		return errSetSlotAction
	}
	s.touchTable()
	s.todoUpdateState = true
	s.save(false)
	s.afterStep()
	return nil
}

var errSetSlotAction = errors.New("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP")

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != b[i] {
			return false
		}
	}
	return true
}

// Forget is CLUSTER FORGET id: drop the node and refuse to re-learn it for
// 60 seconds.
func (s *State) Forget(id string) error {
	n := s.lookup(id)
	switch {
	case n == nil:
		return errorf("Unknown node %s", id)
	case n == s.myself:
		return errors.New("ERR I tried hard but I can't forget myself...")
	case s.myself.isSlave() && s.myself.master == n:
		return errors.New("ERR Can't forget my master!")
	}
	s.blacklistCleanup()
	s.blacklist[n.id] = s.clock.Now().Add(blacklistTTL)
	s.delNode(n)
	s.todoUpdateState = true
	s.save(false)
	s.afterStep()
	return nil
}

// Replicate is CLUSTER REPLICATE id; dbEmpty tells whether db 0 has no key.
func (s *State) Replicate(id string, dbEmpty bool) error {
	n := s.lookup(id)
	switch {
	case n == nil:
		return errorf("Unknown node %s", id)
	case n == s.myself:
		return errors.New("ERR Can't replicate myself")
	case n.isSlave():
		return errors.New("ERR I can only replicate a master, not a replica.")
	case s.myself.isMaster() && (s.myself.numSlots != 0 || !dbEmpty):
		return errors.New("ERR To set a master the node must be empty and without assigned slots.")
	}
	s.setMyMaster(n)
	s.todoUpdateState = true
	s.save(false)
	s.afterStep()
	return nil
}

// Reset is CLUSTER RESET [HARD|SOFT]; dbEmpty tells whether the node has
// no key. A replica becomes a master (the server must stop replicating and
// empty its data, as Redis does), every other node is forgotten, slots and
// marks are dropped; HARD also zeroes the epochs and takes a new id.
func (s *State) Reset(hard bool, dbEmpty bool) error {
	me := s.myself
	if me.isMaster() && !dbEmpty {
		return errors.New("ERR CLUSTER RESET can't be called with master nodes containing keys")
	}
	if me.isSlave() {
		s.setNodeAsMaster(me)
		s.out.FlushData = true
	}
	s.closeAllSlots()
	for j := 0; j < slots.Count; j++ {
		s.delSlot(j)
	}
	for _, n := range append([]*node(nil), s.order...) {
		if n != me {
			s.delNode(n)
		}
	}
	if hard {
		s.currentEpoch, s.lastVoteEpoch, me.configEpoch = 0, 0, 0
		delete(s.nodes, me.id)
		me.id = s.randomID()
		s.nodes[me.id] = me
		s.out.IDChanged = true
		s.log.Info("node hard reset", zap.String("id", me.id))
	}
	s.out.Reset = true
	s.touchTable()
	s.todoUpdateState = true
	s.save(true)
	s.afterStep()
	return nil
}

// SetConfigEpoch is CLUSTER SET-CONFIG-EPOCH epoch: allowed only on a node
// that knows no other node and has configEpoch 0.
func (s *State) SetConfigEpoch(arg []byte) error {
	epoch, ok := strconvx.ParseInt(arg)
	switch {
	case !ok:
		return errNotInteger
	case epoch < 0:
		return errorf("Invalid config epoch specified: %d", epoch)
	case len(s.nodes) > 1:
		return errors.New("ERR The user can assign a config epoch only when the node does not know any other node.")
	case s.myself.configEpoch != 0:
		return errors.New("ERR Node config epoch is already non-zero")
	}
	s.myself.configEpoch = uint64(epoch)
	if s.currentEpoch < uint64(epoch) {
		s.currentEpoch = uint64(epoch)
	}
	s.todoUpdateState = true
	s.save(false)
	s.afterStep()
	return nil
}

// BumpEpoch is CLUSTER BUMPEPOCH; it returns the status reply text,
// "BUMPED <epoch>" or "STILL <epoch>".
func (s *State) BumpEpoch() string {
	word := "STILL"
	if s.bumpEpochWithoutConsensus() {
		word = "BUMPED"
	}
	return fmt.Sprintf("%s %d", word, s.myself.configEpoch)
}

// CountFailureReports is CLUSTER COUNT-FAILURE-REPORTS id.
func (s *State) CountFailureReports(id string) (int, error) {
	n := s.lookup(id)
	if n == nil {
		return 0, errorf("Unknown node %s", id)
	}
	return s.failureReportsCount(n), nil
}

// SetReplOffset records this node's replication offset (sent in every
// header; CLUSTER SLOTS/SHARDS show it).
func (s *State) SetReplOffset(off int64) {
	s.myself.replOffset = off
	if off > 0 {
		s.myself.loadedData = false // synced: the offset tells from now on
	}
}

// SetOptions replaces the options (CONFIG SET of a cluster-* directive).
func (s *State) SetOptions(o Options) {
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = s.opts.NodeTimeout
	}
	s.opts = o
	s.fo.SetConfig(failoverConfig(o))
	if o.NoFailover {
		s.myself.flags |= FlagNoFailover
	} else {
		s.myself.flags &^= FlagNoFailover
	}
	s.todoUpdateState = true
	s.afterStep()
}

// SetAnnounced sets what myself announces (Redis's clusterUpdateMyselfIp,
// clusterUpdateMyselfAnnouncedPorts and clusterUpdateMyselfHostname, run at
// start-up and after CONFIG SET): ip is cluster-announce-ip (or the bind
// address), "" to learn the address from peers — an IP that was configured
// is then forgotten, as Redis forces autodetection; port and cport 0 keep
// the current ones.
func (s *State) SetAnnounced(ip string, port, cport int, hostname string) {
	me := s.myself
	changed := false
	if ip != "" {
		changed = me.ip != ip
		me.ip = ip
	} else if s.ipFixed {
		changed = me.ip != ""
		me.ip = ""
	}
	s.ipFixed = ip != ""
	if port > 0 && port != me.port {
		me.port, changed = port, true
	}
	if cport > 0 && cport != me.cport {
		me.cport, changed = cport, true
	}
	if hostname != me.hostname {
		me.hostname, changed = hostname, true
	}
	if !changed {
		return
	}
	s.touchTable()
	s.save(false)
	s.out.AddrChanged = true
}

// UseMessagePool makes the State take the messages it sends from mp; their
// consumer gives each back to mp once it has encoded it.
func (s *State) UseMessagePool(mp *MessagePool) { s.msgs = mp }

// SetPlaintextPort sets the plaintext client port this node announces
// beside its TLS port in a TLS cluster (Redis's pport; 0 = none).
func (s *State) SetPlaintextPort(pport int) {
	me := s.myself
	if me.pport == pport {
		return
	}
	me.pport = pport
	s.touchTable()
	s.out.AddrChanged = true
}

// LinkFreed records that the Bus freed the link to a node whose send
// buffer passed cluster-link-sendbuf-limit: the next cron tick makes a new
// one (a PING, keeping a pending ping's time), as Redis reconnects.
func (s *State) LinkFreed(id string) {
	s.linksBufferExceeded++
	if n := s.lookup(id); n != nil && n != s.myself {
		n.linkTime = time.Time{}
	}
}

// MyIP is the IP this node announces ("" while it is still unknown: no
// cluster-announce-ip and no peer met it yet).
func (s *State) MyIP() string { return s.myself.ip }

// SetLastVoteEpoch records a vote (the failover layer calls it before it
// sends an ACK; Ready then asks for an fsync before that message leaves).
func (s *State) SetLastVoteEpoch(e uint64) {
	s.lastVoteEpoch = e
	s.save(true)
}

// SendTo queues a message for the node with the given id (the failover and
// pub/sub layers use it: the header is filled here). It reports whether the
// node is known.
func (s *State) SendTo(id string, m *Message, reliable bool) bool {
	n := s.lookup(id)
	if n == nil || n == s.myself {
		return false
	}
	h := s.header(m.Type)
	h.MFlags, h.About, h.Update, h.Channel, h.Payload = m.MFlags, m.About, m.Update, m.Channel, m.Payload
	s.send(n, h, reliable)
	return true
}

// Broadcast queues a message for every known node (header filled here).
func (s *State) Broadcast(m *Message, reliable bool) { s.broadcast(m, reliable) }
