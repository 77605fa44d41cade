package gossip

import (
	"time"

	"github.com/shoal-db/shoal/failover"
	"github.com/shoal-db/shoal/slots"
	"go.uber.org/zap"
)

// header fills the sender part of a message from myself (clusterBuildMessageHdr):
// a replica advertises its master's slots and configEpoch.
func (s *State) header(t MsgType) *Message {
	me := s.myself
	src := me
	if me.isSlave() && me.master != nil {
		src = me.master
	}
	m := s.msgs.get()
	*m = Message{
		Type:         t,
		Sender:       me.id,
		CurrentEpoch: s.currentEpoch,
		ConfigEpoch:  src.configEpoch,
		Offset:       me.replOffset,
		Flags:        me.flags &^ (FlagMeet | FlagMigrateTo),
		IP:           me.ip,
		Port:         uint16(me.port),
		CPort:        uint16(me.cport),
		PPort:        uint16(me.pport),
		Hostname:     me.hostname,
		Slots:        src.slots,
	}
	if me.isSlave() && me.master != nil {
		m.Master = me.master.id
	}
	if me.isMaster() && s.fo.MasterPaused() {
		// Paused for a manual failover: our offset is final.
		m.MFlags |= MFlagPaused
	}
	if s.fo.DataLost() {
		m.MFlags |= MFlagDataLost
	}
	if me.loadedData {
		m.MFlags |= MFlagLoadedData
	}
	return m
}

// send queues m for n.
func (s *State) send(n *node, m *Message, reliable bool) {
	if n == s.myself || !n.hasAddr() || n.ip == "" || n.cport <= 0 {
		return
	}
	if n.linkKilled {
		return // no link until the next cron tick (DEBUG CLUSTERLINK KILL)
	}
	if m.To == "" && m.Type != MsgPong {
		m.To = n.id
	}
	m.ToIP = n.ip
	if n.linkTime.IsZero() {
		n.linkTime = s.clock.Now()
	}
	s.statsSent[m.Type]++
	s.out.Messages = append(s.out.Messages, Envelope{To: n.id, Addr: n.addr(), Reliable: reliable, Msg: m})
}

// broadcast sends m to every known node but myself and handshake nodes
// (clusterBroadcastMessage).
func (s *State) broadcast(m *Message, reliable bool) {
	hdr := s.header(m.Type)
	hdr.About, hdr.Update, hdr.Channel, hdr.Payload, hdr.MFlags = m.About, m.Update, m.Channel, m.Payload, m.MFlags
	for _, n := range s.order {
		if n == s.myself || n.inHandshake() {
			continue
		}
		c := s.msgs.get()
		*c = *hdr
		c.To = n.id
		s.send(n, c, reliable)
	}
	s.msgs.Put(hdr) // only its copies are sent
}

// sendPing builds a PING/PONG/MEET with its gossip section (clusterSendPing):
// max(3, N/10) random healthy nodes plus every PFAIL node.
func (s *State) sendPing(n *node, t MsgType, to string) {
	s.pingCounter++
	m := s.header(t)
	m.To = to
	fresh := len(s.order) - 2
	wanted := len(s.order) / 10
	if wanted < 3 {
		wanted = 3
	}
	if wanted > fresh {
		wanted = fresh
	}
	if t == MsgPing && n != nil && !n.inHandshake() {
		n.pingSent = s.clock.Now()
	} else if t == MsgPing || t == MsgMeet {
		if n != nil && n.pingSent.IsZero() {
			n.pingSent = s.clock.Now()
		}
	}
	// Sized once: appends growing it were a third of the garbage left.
	m.Gossip = make([]GossipEntry, 0, max(wanted, 0)+s.pfailNodes)
	maxIter := wanted * 3
	for fresh > 0 && len(m.Gossip) < wanted && maxIter > 0 {
		maxIter--
		g := s.order[s.rng.IntN(len(s.order))]
		if g == s.myself || g.timedOut() {
			continue
		}
		if g.flags&(FlagHandshake|FlagNoAddr) != 0 || (!s.connected(g) && g.numSlots == 0) {
			fresh--
			continue
		}
		if g.lastGossip == s.pingCounter {
			continue
		}
		g.lastGossip = s.pingCounter
		m.Gossip = append(m.Gossip, s.gossipEntry(g))
		fresh--
	}
	for _, g := range s.order {
		if g.flags&(FlagHandshake|FlagNoAddr) != 0 || !g.timedOut() {
			continue
		}
		m.Gossip = append(m.Gossip, s.gossipEntry(g))
	}
	if n != nil {
		s.send(n, m, t == MsgMeet)
	}
}

func (s *State) gossipEntry(g *node) GossipEntry {
	e := GossipEntry{
		ID:    g.id,
		IP:    g.ip,
		Port:  uint16(g.port),
		CPort: uint16(g.cport),
		PPort: uint16(g.pport),
		Flags: g.flags &^ (FlagMyself | FlagMeet | FlagMigrateTo),
	}
	if !g.pingSent.IsZero() {
		e.PingSent = uint32(g.pingSent.Unix())
	}
	if !g.pongReceived.IsZero() {
		e.PongReceived = uint32(g.pongReceived.Unix())
	}
	return e
}

// BroadcastPong sends a PONG with our configuration to every known node
// (clusterBroadcastPong), e.g. after taking over slots.
func (s *State) BroadcastPong() {
	for _, n := range s.order {
		if n == s.myself || n.inHandshake() {
			continue
		}
		s.sendPing(n, MsgPong, "")
	}
}

// sendUpdate tells n about the newest configuration of about.
func (s *State) sendUpdate(n, about *node) {
	m := s.header(MsgUpdate)
	u := &Update{ID: about.id, ConfigEpoch: about.configEpoch, Slots: about.slots}
	for i := range u.Slots {
		u.Slots[i] &^= s.ownerNotClaiming[i]
	}
	m.Update = u
	s.send(n, m, true)
}

// Step processes one received message (clusterProcessPacket).
func (s *State) Step(m *Message) {
	if m == nil {
		return
	}
	now := s.clock.Now()
	if int(m.Type) < msgTypeCount {
		s.statsRecv[m.Type]++
	}
	if s.dropped(m) {
		return
	}
	defer s.afterStep()

	// Redis's rules (clusterProcessPacket): a sender we do not know, or
	// one still in handshake, changes nothing; its PING/MEET is answered
	// and a MEET starts a handshake (stepPing), nothing else.
	sender := s.lookup(m.Sender)
	if sender != nil && sender.inHandshake() {
		sender = nil
	}
	if sender == s.myself {
		return // our own message looped back
	}
	// FAIL and UPDATE steer the cluster (a failover, slots changing hands):
	// believe them only from a node we are linked with, one that talked to
	// us within node-timeout before this message (Redis: a node with a
	// link). A node that left, or was only just learned from gossip, does
	// not get to fail others or move slots.
	linked := sender != nil && s.connected(sender)
	if sender != nil {
		if sender.inboundTime.IsZero() || now.Sub(sender.dataReceived) > s.opts.NodeTimeout {
			sender.inboundTime = now // a new inbound link
		}
		sender.dataReceived = now
		if m.CurrentEpoch > s.currentEpoch {
			s.currentEpoch = m.CurrentEpoch
			s.save(true)
		}
		// A replica's header carries its master's configEpoch, not its own:
		// taking it for the sender would show a node that still owns slots
		// in our (stale) table under its new master's epoch — the same
		// slots under the same epoch as the master that took them over.
		if m.Master == "" && m.ConfigEpoch > sender.configEpoch {
			sender.configEpoch = m.ConfigEpoch
			s.save(true)
		}
		sender.replOffset = m.Offset
		sender.loadedData = m.MFlags&MFlagLoadedData != 0
		lost := m.MFlags&MFlagDataLost != 0
		if lost != sender.dataLost {
			sender.dataLost = lost
			if lost {
				s.log.Warn("node restarted without its data", zap.String("node", sender.id))
				// A replica of it that holds data takes over now
				// rather than at the next cron tick.
				defer s.masterFailed(sender)
			}
		}
	}

	switch m.Type {
	case MsgPing, MsgPong, MsgMeet:
		s.stepPing(m, sender, now)
	case MsgFail:
		if !linked {
			s.log.Debug("FAIL ignored: sender unknown or not linked", zap.String("from", m.Sender), zap.String("about", m.About))
			return
		}
		failing := s.lookup(m.About)
		if failing != nil && failing.flags&(FlagFail|FlagMyself) == 0 {
			s.log.Info("FAIL message received", zap.String("from", m.Sender), zap.String("about", m.About),
				zap.Uint64("currentEpoch", s.currentEpoch))
			failing.flags |= FlagFail
			failing.failTime = now
			failing.flags &^= FlagPFail
			s.todoUpdateState = true
			s.save(false)
			s.masterFailed(failing)
		}
	case MsgUpdate:
		if !linked || m.Update == nil {
			s.log.Debug("UPDATE ignored: sender unknown or not linked", zap.String("from", m.Sender))
			return
		}
		n := s.lookup(m.Update.ID)
		if n == nil || n.configEpoch >= m.Update.ConfigEpoch {
			return
		}
		if n.isSlave() {
			s.setNodeAsMaster(n)
		}
		n.configEpoch = m.Update.ConfigEpoch
		s.save(true)
		s.updateSlotsConfigWith(n, m.Update.ConfigEpoch, &m.Update.Slots)
	case MsgAuthRequest, MsgAuthAck, MsgMFStart:
		if sender == nil {
			return
		}
		kind := failover.MsgAuthRequest
		if m.Type == MsgAuthAck {
			kind = failover.MsgAuthAck
		} else if m.Type == MsgMFStart {
			kind = failover.MsgMFStart
		}
		s.failoverStep(m, kind)
	case MsgPublish, MsgPublishShard:
		if sender == nil {
			return
		}
		s.out.Inbound = append(s.out.Inbound, m)
	}
	// Any packet of our master flagged PAUSED carries its final offset for
	// our manual failover.
	if sender != nil && m.MFlags&MFlagPaused != 0 && s.myself.master == sender && sender.isMaster() {
		s.failoverStep(m, failover.MsgMasterPaused)
	}
}

func (s *State) stepPing(m *Message, sender *node, now time.Time) {
	// PING and MEET are answered with a PONG whatever happens below.
	if m.Type == MsgPing || m.Type == MsgMeet {
		if sender == nil && m.Type == MsgMeet && !s.blacklisted(m.Sender) {
			// A node we do not know met us: add it in handshake state
			// under a made-up id; our PING will learn its real one.
			if !s.handshakeInProgress(m.IP, int(m.Port), int(m.CPort)) {
				n := s.newNode(s.randomID(), FlagHandshake)
				n.ip, n.port, n.cport, n.pport = m.IP, int(m.Port), int(m.CPort), int(m.PPort)
				s.addNode(n)
				s.save(false)
			}
		}
		s.learnMyIP(m)
		pong := &node{id: m.Sender, ip: m.IP, cport: int(m.CPort)}
		if sender != nil {
			pong = sender
		}
		s.sendPing(pong, MsgPong, m.To)
	}

	// A PONG that echoes an id of ours answers one of our PINGs ("outbound link").
	var link *node
	if m.Type == MsgPong && m.To != "" {
		link = s.lookup(m.To)
	}
	if link != nil && link != s.myself {
		if link.inHandshake() {
			if sender != nil {
				// We already know this node: just take its address.
				if s.updateAddress(sender, m) {
					s.save(false)
					s.todoUpdateState = true
				}
				s.delNode(link)
				return
			}
			if s.lookup(m.Sender) != nil || s.blacklisted(m.Sender) {
				s.delNode(link)
				return
			}
			s.renameNode(link, m.Sender)
			link.hostname = m.Hostname
			link.flags &^= FlagHandshake | FlagMeet
			link.flags |= m.Flags & (FlagMaster | FlagSlave)
			link.pongReceived = now
			link.pingSent = time.Time{}
			link.dataReceived = now
			s.save(false)
			s.log.Debug("handshake completed", zap.String("peer", link.id))
			return // sender stays unknown for this packet, as in Redis
		} else if link.id != m.Sender {
			// Someone else answers at this address: forget the address.
			link.flags |= FlagNoAddr
			link.ip, link.port, link.cport = "", 0, 0
			s.save(false)
			return
		}
	}

	if sender != nil {
		sender.flags = sender.flags&^FlagNoFailover | m.Flags&FlagNoFailover
	}
	if sender != nil && (m.Type == MsgPing || m.Type == MsgMeet) && s.updateAddress(sender, m) {
		s.save(false)
		s.todoUpdateState = true
	} else if sender != nil && sender.hostname != m.Hostname {
		// Redis reads the hostname extension of every PING, PONG and
		// MEET of a known sender (none means no hostname).
		sender.hostname = m.Hostname
		s.touchTable()
		s.save(false)
	}
	if link != nil && link == sender {
		link.pongReceived = now
		link.pingSent = time.Time{}
		if link.timedOut() {
			link.flags &^= FlagPFail
			s.save(false)
			s.todoUpdateState = true
		} else if link.failed() {
			s.clearFailureIfNeeded(link)
		}
	}
	if sender == nil {
		return
	}

	// Role switch.
	if m.Master == "" {
		s.setNodeAsMaster(sender)
	} else {
		master := s.lookup(m.Master)
		// Redis tests nodeIsMaster here; a node that membership found
		// (flags 0, "noflags") must become a replica too, or it would
		// stay without a role for ever.
		if !sender.isSlave() {
			s.delNodeSlots(sender)
			sender.flags &^= FlagMaster | FlagMigrateTo
			sender.flags |= FlagSlave
			s.save(false)
			s.todoUpdateState = true
			s.touchTable()
		}
		if master != nil && sender.master != master {
			if sender.master != nil {
				sender.master.removeReplica(sender)
			}
			master.addReplica(sender)
			sender.master = master
			s.save(false)
		}
	}

	// Slots.
	senderMaster := sender
	if !sender.isMaster() {
		senderMaster = sender.master
	}
	dirty := senderMaster != nil && senderMaster.slots != m.Slots
	if sender.isMaster() && dirty {
		s.updateSlotsConfigWith(sender, m.ConfigEpoch, &m.Slots)
	}
	if dirty {
		// The sender claims slots we know a newer owner of: tell it.
		for j := 0; j < slots.Count; j++ {
			if !m.Slots.Has(j) {
				continue
			}
			o := s.owner.get(j)
			if o == sender || s.slotUnclaimed(j) {
				continue
			}
			if o.configEpoch > m.ConfigEpoch {
				s.sendUpdate(sender, o)
				break
			}
		}
	}
	if s.myself.isMaster() && sender.isMaster() && m.ConfigEpoch == s.myself.configEpoch {
		s.handleEpochCollision(sender)
	}
	s.processGossip(m, sender)
}

// updateAddress is nodeUpdateAddressIfNeeded: a known id talking from a
// new address is the same node, moved.
func (s *State) updateAddress(n *node, m *Message) bool {
	if n == s.myself || m.IP == "" {
		return false
	}
	if n.ip == m.IP && n.port == int(m.Port) && n.cport == int(m.CPort) && n.pport == int(m.PPort) && n.hostname == m.Hostname {
		return false
	}
	n.ip, n.port, n.cport, n.pport, n.hostname = m.IP, int(m.Port), int(m.CPort), int(m.PPort), m.Hostname
	n.flags &^= FlagNoAddr
	s.touchTable()
	s.log.Info("node address updated", zap.String("peer", n.id), zap.String("addr", n.addr()))
	if s.myself.isSlave() && s.myself.master == n {
		s.out.RoleChanged = true // the server re-points replication
	}
	return true
}

// learnMyIP takes this node's address from a PING or MEET when none is
// configured (no cluster-announce-ip, no bind address): the address the
// sender reached us at, as Redis takes the local address of the connection
// a MEET (or, while it has no address yet, a PING) arrived on. Peers then
// see the address they met the node on, never an unrelated interface.
func (s *State) learnMyIP(m *Message) {
	if s.ipFixed || m.ToIP == "" || m.ToIP == s.myself.ip {
		return
	}
	if m.Type != MsgMeet && s.myself.ip != "" {
		return
	}
	s.myself.ip = m.ToIP
	s.touchTable()
	s.save(false)
	s.out.AddrChanged = true
	s.log.Warn("IP address for this node updated to " + m.ToIP)
}

func (s *State) handshakeInProgress(ip string, port, cport int) bool {
	for _, n := range s.order {
		if n.inHandshake() && n.ip == ip && n.port == port && n.cport == cport {
			return true
		}
	}
	return false
}

// processGossip is clusterProcessGossipSection.
func (s *State) processGossip(m *Message, sender *node) {
	now := s.clock.Now()
	for i := range m.Gossip {
		g := &m.Gossip[i]
		n := s.lookup(g.ID)
		if n != nil {
			if sender != nil && sender.isMaster() && n != s.myself {
				if g.Flags&(FlagFail|FlagPFail) != 0 {
					s.addFailureReport(n, sender)
					s.markFailingIfNeeded(n)
				} else {
					s.delFailureReport(n, sender)
				}
			}
			if g.Flags&(FlagFail|FlagPFail) == 0 && n.pingSent.IsZero() && s.failureReportsCount(n) == 0 {
				pong := time.Unix(int64(g.PongReceived), 0)
				if g.PongReceived != 0 && !pong.After(now.Add(500*time.Millisecond)) && pong.After(n.pongReceived) {
					n.pongReceived = pong
				}
			}
			if n.flags&(FlagFail|FlagPFail) != 0 && g.Flags&FlagNoAddr == 0 && g.Flags&(FlagFail|FlagPFail) == 0 &&
				(n.ip != g.IP || n.port != int(g.Port) || n.cport != int(g.CPort)) && g.IP != "" {
				n.ip, n.port, n.cport, n.pport = g.IP, int(g.Port), int(g.CPort), int(g.PPort)
				n.flags &^= FlagNoAddr
				n.linkTime = time.Time{}
				s.touchTable()
			}
		} else if sender != nil && g.Flags&FlagNoAddr == 0 && !s.blacklisted(g.ID) {
			n := s.newNode(g.ID, g.Flags&^(FlagMyself|FlagMeet|FlagMigrateTo))
			n.ip, n.port, n.cport, n.pport = g.IP, int(g.Port), int(g.CPort), int(g.PPort)
			s.addNode(n)
			s.save(false)
		}
	}
}

// updateSlotsConfigWith is clusterUpdateSlotsConfigWith: rebind the slots
// sender claims under senderEpoch where that configuration is newer.
func (s *State) updateSlotsConfigWith(sender *node, senderEpoch uint64, claimed *slots.Bitmap) {
	if sender == s.myself {
		return
	}
	me := s.myself
	cur := me
	if !me.isMaster() {
		cur = me.master
	}
	var newMaster *node
	var dirty, held, kept []int
	senderSlots, migratedOurs := 0, 0
	for j := 0; j < slots.Count; j++ {
		owner := s.owner.get(j) // the slot's owner until this pass moves it below
		if claimed.Has(j) {
			senderSlots++
			if owner == sender {
				s.ownerNotClaiming.Clear(j)
				continue
			}
			if s.importing.get(j) != nil {
				continue
			}
			if s.slotUnclaimed(j) || owner.configEpoch < senderEpoch {
				if owner == me && s.holdsHandoff(j, sender) {
					held = append(held, j) // migrate.go: noteHandoff
					continue
				}
				if owner == me {
					if s.migrating.get(j) == sender {
						// The keys still here are on their way to the
						// claimant: keep them for the migration (or redis-cli
						// fix) to move instead of deleting them as Redis does.
						kept = append(kept, j)
					} else {
						dirty = append(dirty, j)
					}
				}
				if cur != nil && owner == cur {
					newMaster = sender
					migratedOurs++
				}
				s.delSlot(j)
				s.addSlot(sender, j)
				s.save(true)
				s.todoUpdateState = true
			}
		} else if owner == sender {
			s.ownerNotClaiming.Set(j)
		}
	}
	if len(held) > 0 {
		s.reassertHandoff(sender, senderEpoch, held)
	}
	switch {
	case newMaster != nil && cur != nil && cur.numSlots == 0 &&
		(s.opts.AllowReplicaMigration || senderSlots == migratedOurs):
		s.log.Warn("configuration change detected, reconfiguring myself as a replica", zap.String("master", sender.id))
		s.setMyMaster(sender)
		s.save(true)
		s.todoUpdateState = true
	case me.master != nil && me.master.master != nil && me.master.master != me:
		s.log.Warn("I'm a sub-replica, reconfiguring myself as a replica of the grandmaster", zap.String("master", me.master.master.id))
		s.setMyMaster(me.master.master)
		s.save(true)
		s.todoUpdateState = true
	case len(dirty) > 0 && me.isMaster():
		s.out.LostSlots = append(s.out.LostSlots, dirty...)
	}
	if len(kept) > 0 && me.isMaster() {
		s.out.MovedOutSlots = append(s.out.MovedOutSlots, kept...)
	}
}

// Tick runs the periodic work of clusterCron; call it every 100 ms.
func (s *State) Tick() {
	defer s.afterStep()
	s.ticks++
	now := s.clock.Now()
	s.discountStall(now)
	nt := s.opts.NodeTimeout
	handshakeTimeout := nt
	if handshakeTimeout < time.Second {
		handshakeTimeout = time.Second
	}
	s.pfailNodes = 0
	for _, n := range append([]*node(nil), s.order...) {
		if n.flags&(FlagMyself|FlagNoAddr) != 0 {
			continue
		}
		if n.timedOut() {
			s.pfailNodes++
		}
		if n.inHandshake() {
			if now.Sub(n.ctime) > handshakeTimeout {
				s.delNode(n)
				continue
			}
			// Re-send the handshake packet until answered (handshakeResendTicks).
			if n.handshakeTx == 0 {
				t := MsgPing
				if n.flags&FlagMeet != 0 {
					t = MsgMeet
				}
				s.sendPing(n, t, n.id)
			}
			n.handshakeTx = (n.handshakeTx + 1) % handshakeResendTicks
			continue
		}
	}

	// One random node among five, the one heard from least recently,
	// every second (Redis: the oldest pong; here a node that pings us is
	// heard without pongs, see pingGap).
	if s.ticks%randomPingEveryTicks == 0 && len(s.order) > 1 {
		var min *node
		for j := 0; j < 5; j++ {
			n := s.order[s.rng.IntN(len(s.order))]
			if !n.pingSent.IsZero() || n.flags&(FlagMyself|FlagHandshake|FlagNoAddr) != 0 {
				continue
			}
			if min == nil || n.lastHeard().Before(min.lastHeard()) {
				min = n
			}
		}
		if min != nil {
			s.sendPing(min, MsgPing, min.id)
		}
	}

	updateState := false
	pfailed := false
	for _, n := range s.order {
		if n.flags&(FlagMyself|FlagNoAddr|FlagHandshake) != 0 {
			continue
		}
		n.linkKilled = false
		// Drop a link that has been silent too long; the next ping makes
		// a new one (Redis frees and reconnects the link).
		if !n.linkTime.IsZero() && now.Sub(n.linkTime) > nt && !n.pingSent.IsZero() &&
			now.Sub(n.pingSent) > nt/2 && now.Sub(n.dataReceived) > nt/2 {
			n.linkTime = time.Time{}
		}
		// A new link starts with a PING (clusterLinkConnectHandler): a node
		// just learned from gossip tells us its role and slots at once.
		if n.linkTime.IsZero() {
			old := n.pingSent
			s.sendPing(n, MsgPing, n.id)
			if !old.IsZero() {
				n.pingSent = old // a reconnect must not hide a pending ping
			}
			continue
		}
		// Half a tick of slack: a PONG arrives a moment after the tick that
		// sent the PING, and without it the ping would wait a second tick.
		if n.pingSent.IsZero() && now.Sub(n.lastHeard())+tickSlack >= s.pingGap(n) {
			s.sendPing(n, MsgPing, n.id)
			continue
		}
		if n.pingSent.IsZero() {
			continue
		}
		// A ping lost on the way (a dropped packet, or one sent while the
		// node was down) is never answered, and memberlist has no TCP link
		// whose reset would re-ping as Redis's does. Ping again a node that
		// talks to us but leaves our ping pending (keeping the first send
		// time for PFAIL): its PONG is what clears PFAIL and FAIL.
		if n.dataReceived.After(n.pingSent) && now.Sub(n.pingSent) > pingInterval(nt) {
			old := n.pingSent
			s.sendPing(n, MsgPing, n.id)
			n.pingSent = old
		}
		if s.checkPFail(n, now) {
			updateState = true
			pfailed = true
		}
	}
	if updateState || !s.stateOK {
		s.todoUpdateState = true
	}
	if pfailed {
		s.pushFailureReports()
	}
	s.failoverTick()
}

// tickSlack is half of the 100 ms cron period.
const tickSlack = 50 * time.Millisecond

// pingInterval is how old a node's last PONG may get before we ping it
// again: node-timeout/3 (Redis: node-timeout/2), never below one tick.
// Failure detection does not wait for the next ping (see silentSince): the
// silence is counted from the node's last message, so a crashed node is
// flagged about node-timeout after it last spoke, whatever the phase of
// the pings. Pinging every node-timeout/10, as shoal did, made each node
// send and answer ~100 PINGs per second at node-timeout 1 s in a six-node
// cluster, nearly all of an idle node's CPU (10x Redis's).
func pingInterval(nt time.Duration) time.Duration {
	return max(nt/3, 100*time.Millisecond)
}

// pingGap is how long n may stay unheard before we ping it. Any message
// from n counts (its PING to us as much as its PONG to ours), and the two
// ends of a pair do not ping at once: the end with the lower id pings one
// ping interval after it last heard from the other, the higher one waits
// half an interval more, so while both live only the lower one's PING and
// the PONG to it cross the bus each interval — half the packets of both
// ends pinging (an idle six-node cluster's bus traffic, and with it most
// of an idle node's CPU). Failure detection is not slowed: silence is
// counted from the node's last message (silentSince), and pingSent minus
// the gap never falls after that message, so the waiting end, left alone
// when the other dies, still flags it node-timeout after it last spoke.
func (s *State) pingGap(n *node) time.Duration {
	iv := pingInterval(s.opts.NodeTimeout)
	if s.myself != nil && n.id < s.myself.id {
		return iv + iv/2
	}
	return iv
}

// afterStep runs what Redis does in clusterBeforeSleep.
func (s *State) afterStep() {
	if s.todoUpdateState {
		s.todoUpdateState = false
		s.updateState()
	}
}

// updateState computes cluster_state (clusterUpdateState).
func (s *State) updateState() {
	now := s.clock.Now()
	if s.firstStateCall.IsZero() {
		s.firstStateCall = now
	}
	if s.myself.isMaster() && !s.stateOK && now.Sub(s.firstStateCall) < writableDelay {
		return
	}
	ok := true
	if s.opts.RequireFullCoverage {
		for j := 0; j < slots.Count; j++ {
			if n := s.owner.get(j); n == nil || n.failed() {
				ok = false
				break
			}
		}
	}
	size, reachable := 0, 0
	for _, n := range s.order {
		if n.isMaster() && n.numSlots > 0 {
			size++
			if n.flags&(FlagFail|FlagPFail) == 0 {
				reachable++
			}
		}
	}
	s.size = size
	if reachable < size/2+1 {
		ok = false
		s.minorityTime = now
	}
	if ok != s.stateOK {
		rejoin := s.opts.NodeTimeout
		if rejoin > maxRejoinDelay {
			rejoin = maxRejoinDelay
		}
		if rejoin < minRejoinDelay {
			rejoin = minRejoinDelay
		}
		if ok && s.myself.isMaster() && now.Sub(s.minorityTime) < rejoin {
			return
		}
		s.log.Warn("cluster state changed", zap.Bool("ok", ok))
		s.stateOK = ok
		s.touchTable()
	}
}

// Ready returns (and forgets) what the state machine produced since the
// last call. See Ready for the order in which the caller must act on it.
func (s *State) Ready() Ready {
	s.afterStep()
	rd := s.out
	s.out = Ready{}
	if s.tableGen != s.publishedGen || s.lastTable == nil {
		s.publishedGen = s.tableGen
		t := s.buildTable()
		if !t.Equal(s.lastTable) {
			rd.Table = t
			s.lastTable = t
		}
	}
	master := s.myself.master
	if !s.roleSeen || master != s.myMasterSeen {
		s.roleSeen = true
		s.myMasterSeen = master
		rd.RoleChanged = true
	}
	if rd.RoleChanged {
		rd.MasterID = ""
		if master != nil {
			rd.MasterID = master.id
		}
	}
	return rd
}

func (s *State) buildTable() *slots.Table {
	b := slots.NewBuilder()
	// One pass over the slots (not one per node): the table is rebuilt
	// after every change and must stay cheap with many nodes.
	own := make(map[*node]*slots.Bitmap)
	var order []*node
	for j := range slots.Count {
		n := s.owner.get(j)
		if n == nil {
			continue
		}
		bm := own[n]
		if bm == nil {
			bm = new(slots.Bitmap)
			own[n] = bm
			order = append(order, n)
		}
		bm.Set(j)
	}
	for _, n := range order {
		b.Assign(own[n], slots.Node{ID: n.id, IP: n.ip, Port: n.port, PPort: n.pport, Hostname: n.hostname})
	}
	for j := 0; j < slots.Count; j++ {
		if m := s.migrating.get(j); m != nil {
			b.Migrating(j, m.id)
		}
		if m := s.importing.get(j); m != nil {
			b.Importing(j, m.id)
		}
	}
	master := ""
	if s.myself.master != nil {
		master = s.myself.master.id
	}
	s.tableVersion++
	return b.Build(s.myself.id, master, s.stateOK, s.tableVersion)
}
