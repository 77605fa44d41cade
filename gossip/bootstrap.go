package gossip

import (
	"context"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/slots"
	"go.uber.org/zap"
)

// This file is the self-forming cluster (issue 9): nodes started with
// cluster-seeds meet each other without a `redis-cli --cluster create`, and
// with cluster-bootstrap-masters N (and -replicas R) they assign the slots
// and attach the replicas themselves.
//
// The decision is a pure function of the cluster view (formationStep), so
// that every node, given the same view, reaches the same assignment:
//
//   - A node that serves slots or replicates a master is formed; nothing is
//     ever undone (nodes.conf wins, so restarts are idempotent).
//   - While no node serves any slot, a node waits until it knows N*(1+R)
//     nodes and that set has not changed for formationSettle; the plan is
//     the sorted ids: the first N are the masters (master i claims the i-th
//     of N equal slot ranges), the next N*R are the replicas (replica j of
//     master j mod N).
//   - While some slots are served but not all, the bootstrap is under way:
//     a planned master whose range is still free claims it (the others may
//     have acted first), a planned replica replicates its planned master.
//   - Once every slot is served, a planned replica whose planned master
//     still lacks replicas takes it (it was just slower than the others);
//     any other unformed node (one that joins later: its id may shift the
//     plan onto masters that have their replicas) becomes a replica of the
//     slot-serving master with the fewest replicas, the smallest id on
//     ties.
//
// The seeds are met again whenever a known node is unreachable, with their
// names resolved afresh: a pod that came back with a new IP is found through
// its stable DNS name (its id, slots and role come from its nodes.conf).

const (
	// formationPoll is how often the view is examined while forming;
	// formedPoll once this node has its role.
	formationPoll = 200 * time.Millisecond
	formedPoll    = time.Second
	// formationSettle is how long the set of known nodes must stay the same
	// before a fresh cluster assigns its slots (nodes still in handshake
	// would otherwise make two nodes compute different plans).
	formationSettle = time.Second
	// seedMeetEvery paces MEETs to seeds while a node is missing.
	seedMeetEvery = 2 * time.Second
	// staleConfAfter is how long a restarted node waits for a peer of its
	// nodes.conf to answer before it looks the seeds up.
	staleConfAfter = time.Second
	// seedResolveTimeout bounds one DNS lookup of a seed.
	seedResolveTimeout = 2 * time.Second
)

// formationKind is what a node should do to join the planned cluster.
type formationKind int

const (
	formWait      formationKind = iota // not enough information yet
	formDone                           // already serving slots or replicating
	formClaim                          // claim slots [Start, End]
	formReplicate                      // CLUSTER REPLICATE Master
)

// formationAction is the outcome of formationStep.
type formationAction struct {
	Kind       formationKind
	Start, End int    // formClaim: the slot range
	Master     string // formReplicate: the master's id
}

// planRange is the i-th of n equal slot ranges (the remainder spread over
// the first ranges, as redis-cli --cluster create does).
func planRange(i, n int) (start, end int) {
	per := slots.Count / n
	rem := slots.Count % n
	start = i*per + min(i, rem)
	end = start + per - 1
	if i < rem {
		end++
	}
	return start, end
}

// formationStep decides this node's next step from the cluster view (nodes
// as Bus.Nodes returns them, myself included) for masters N and replicas R
// per master. It is deterministic and has no side effects.
func formationStep(myID string, nodes []NodeInfo, masters, replicas int) formationAction {
	var me *NodeInfo
	var ids []string
	owners := map[string]int{} // slot-serving, non-failed master → replica count
	served := 0
	var owned slots.Bitmap
	for i := range nodes {
		n := &nodes[i]
		if n.ID == myID {
			me = &nodes[i]
		}
		if n.Flags&(FlagHandshake|FlagNoAddr) != 0 {
			continue
		}
		ids = append(ids, n.ID)
		if n.NumSlots > 0 {
			served += n.NumSlots
			n.Slots.Each(func(s int) { owned.Set(s) })
			if n.Flags&(FlagFail|FlagPFail) == 0 && n.Flags&FlagSlave == 0 {
				owners[n.ID] = 0
			}
		}
	}
	if me == nil {
		return formationAction{Kind: formWait}
	}
	if me.NumSlots > 0 || me.Master != "" || me.Flags&FlagSlave != 0 {
		return formationAction{Kind: formDone}
	}
	// A node's role (master of whom) is only known once it talked to us
	// directly: gossip about it carries flags, not its master. Decide on a
	// complete view only (failing nodes aside: they may never answer). A
	// pong time is not proof enough (gossip carries others' pong times
	// too): a replica whose master we do not know yet would leave its
	// master looking short of replicas to a node that joins late.
	for _, n := range nodes {
		if n.ID == myID || n.Flags&(FlagHandshake|FlagNoAddr|FlagPFail|FlagFail) != 0 {
			continue
		}
		if n.PongReceived == 0 || n.Flags&FlagSlave != 0 && n.Master == "" {
			return formationAction{Kind: formWait}
		}
	}
	for _, n := range nodes {
		if _, ok := owners[n.Master]; ok && n.Flags&FlagFail == 0 {
			owners[n.Master]++
		}
	}
	total := masters * (1 + replicas)
	slices.Sort(ids)
	planned := -1
	if len(ids) >= total {
		planned = slices.Index(ids[:total], myID)
	}
	if served == 0 {
		if planned < 0 {
			return formationAction{Kind: formWait}
		}
		if planned < masters {
			start, end := planRange(planned, masters)
			return formationAction{Kind: formClaim, Start: start, End: end}
		}
		return formationAction{Kind: formReplicate, Master: ids[(planned-masters)%masters]}
	}
	if served < slots.Count {
		// The bootstrap is under way: follow the plan (the others may not
		// have acted yet).
		if planned >= 0 && planned < masters {
			start, end := planRange(planned, masters)
			free := true
			for s := start; s <= end && free; s++ {
				free = !owned.Has(s)
			}
			if free {
				return formationAction{Kind: formClaim, Start: start, End: end}
			}
		}
		if planned >= masters {
			if m := ids[(planned-masters)%masters]; hasKey(owners, m) || liveMaster(nodes, m) {
				return formationAction{Kind: formReplicate, Master: m}
			}
		}
		return formationAction{Kind: formWait}
	}
	// Every slot is served. A planned replica that was slower than the
	// others still takes its planned master while that one lacks replicas
	// (the replica counts in this view may lag behind: following the plan
	// avoids two replicas picking the same "least replicated" master).
	if planned >= masters {
		if m := ids[(planned-masters)%masters]; hasKey(owners, m) && owners[m] < replicas {
			return formationAction{Kind: formReplicate, Master: m}
		}
	}
	// A node that joins later: the master with the fewest replicas, the
	// smallest id on ties.
	best, bestCount := "", 0
	for id, count := range owners {
		if best == "" || count < bestCount || (count == bestCount && id < best) {
			best, bestCount = id, count
		}
	}
	if best == "" || best == myID {
		return formationAction{Kind: formWait}
	}
	return formationAction{Kind: formReplicate, Master: best}
}

// liveMaster: id is known, not a replica, not failing.
func liveMaster(nodes []NodeInfo, id string) bool {
	for _, n := range nodes {
		if n.ID == id {
			return n.Master == "" && n.Flags&(FlagSlave|FlagFail|FlagPFail|FlagHandshake) == 0
		}
	}
	return false
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

// Former runs the seeds and the bootstrap for one node. It is driven by
// one goroutine (Run); its fields are that goroutine's own.
type Former struct {
	bus      *Bus
	log      *zap.Logger
	seeds    []config.ClusterSeed
	masters  int
	replicas int
	dbEmpty  func() bool // the node holds no keys (CLUSTER REPLICATE's precondition)
	stop     <-chan struct{}

	started   time.Time // when Run began
	lastSet   []string  // the known ids at the previous poll
	setSince  time.Time // when lastSet last changed
	lastMeet  time.Time
	lastPoll  time.Time
	announced bool // this node has its role ("formed" logged), or there is no plan
	// unresolved holds the seeds whose name did not resolve, with when
	// that was last logged at WARN (again every seedWarnEvery while it
	// lasts; a name that resolves again is logged once at INFO).
	unresolved map[string]time.Time
}

// seedWarnEvery is how often a seed name that keeps failing to resolve is
// logged again at WARN (a pod's log must say why it is not ready).
const seedWarnEvery = time.Minute

// NewFormer returns the former of the node on bus: it meets seeds, and with
// masters > 0 forms a cluster of masters masters with replicas replicas
// each. dbEmpty reports whether the node holds no keys.
func NewFormer(bus *Bus, log *zap.Logger, seeds []config.ClusterSeed, masters, replicas int, dbEmpty func() bool) *Former {
	return &Former{bus: bus, log: log, seeds: seeds, masters: masters, replicas: replicas, dbEmpty: dbEmpty}
}

// Run polls the view and acts until stop is closed.
func (f *Former) Run(stop <-chan struct{}) {
	f.stop = stop
	f.started = time.Now()
	t := time.NewTicker(formationPoll)
	defer t.Stop()
	if f.needsSeeds(f.bus.Nodes(), f.started) {
		f.meetSeeds(context.Background()) // at once: the first poll is 200 ms away
	}
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		f.poll()
	}
}

// poll is one look at the view: meet the seeds if someone is missing, then
// take the next formation step.
func (f *Former) poll() {
	now := time.Now()
	if f.announced && now.Sub(f.lastPoll) < formedPoll {
		return // formed: only the seeds are left to watch
	}
	f.lastPoll = now
	nodes := f.bus.Nodes()
	if f.needsSeeds(nodes, now) && now.Sub(f.lastMeet) >= seedMeetEvery {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-f.stop:
			case <-ctx.Done():
			}
			cancel()
		}()
		f.meetSeeds(ctx)
		cancel()
	}
	if f.masters <= 0 {
		f.announced = true // seeds only: nothing to form, poll slowly
		return
	}
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		if n.Flags&(FlagHandshake|FlagNoAddr) == 0 {
			ids = append(ids, n.ID)
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, f.lastSet) {
		f.lastSet, f.setSince = ids, now
	}
	act := formationStep(f.bus.MyID(), nodes, f.masters, f.replicas)
	switch act.Kind {
	case formDone:
		if !f.announced {
			f.announced = true
			f.log.Info("cluster formation: this node has its role", zap.String("id", f.bus.MyID()))
		}
	case formClaim:
		// Act on a settled view only (nodes still in handshake or just
		// discovered would make two nodes decide differently).
		if now.Sub(f.setSince) < formationSettle {
			return
		}
		err := f.bus.AddSlotsRange([][]byte{[]byte(strconv.Itoa(act.Start)), []byte(strconv.Itoa(act.End))})
		f.log.Info("cluster formation: claiming slots", zap.Int("from", act.Start), zap.Int("to", act.End), zap.Error(err))
		if err == nil {
			f.bus.BroadcastPong()
		}
	case formReplicate:
		if now.Sub(f.setSince) < formationSettle {
			return
		}
		err := f.bus.Replicate(act.Master, f.dbEmpty())
		f.log.Info("cluster formation: replicating", zap.String("master", act.Master), zap.Error(err))
		if err == nil {
			f.bus.BroadcastPong()
		}
	}
}

// needsSeeds: no peer known yet; a known node is unreachable (it may be
// back under a new address that only its name resolves to); or, a moment
// after the start, a peer from nodes.conf does not answer (its address may
// be stale, as after all the pods of a StatefulSet were rescheduled). Only
// seed addresses that no known node has are met (meetSeeds), so in a
// steady cluster this costs the name lookups.
func (f *Former) needsSeeds(nodes []NodeInfo, now time.Time) bool {
	if len(f.seeds) == 0 {
		return false
	}
	peers, disconnected := 0, 0
	for _, n := range nodes {
		if n.Flags&FlagMyself != 0 || n.Flags&FlagHandshake != 0 {
			continue
		}
		peers++
		if n.Flags&(FlagPFail|FlagFail|FlagNoAddr) != 0 {
			return true
		}
		if !n.Connected {
			disconnected++
		}
	}
	return peers == 0 || disconnected > 0 && now.Sub(f.started) >= staleConfAfter
}

// meetSeeds resolves every seed and MEETs the addresses no known node has
// (a name that now leads to a new address). Known addresses, failing or
// not, are the bus's own business: it re-joins them periodically.
func (f *Former) meetSeeds(ctx context.Context) {
	f.lastMeet = time.Now()
	if len(f.seeds) == 0 {
		return
	}
	known := map[string]bool{}
	for _, n := range f.bus.Nodes() {
		if n.Flags&FlagHandshake == 0 && n.IP != "" {
			known[net.JoinHostPort(n.IP, strconv.Itoa(n.Port))] = true
		}
	}
	myIP := net.ParseIP(f.bus.Myself().IP)
	var r net.Resolver
	for _, seed := range f.seeds {
		ip := seed.Host
		if net.ParseIP(seed.Host) == nil {
			lctx, cancel := context.WithTimeout(ctx, seedResolveTimeout)
			addrs, err := r.LookupHost(lctx, seed.Host)
			cancel()
			if err != nil || len(addrs) == 0 {
				f.seedUnresolved(seed.Host, err)
				continue
			}
			f.seedResolved(seed.Host, addrs)
			ip = pickSeedAddr(addrs, myIP)
		}
		if known[net.JoinHostPort(ip, strconv.Itoa(seed.Port))] {
			continue
		}
		cport := seed.CPort
		if cport == 0 {
			cport = seed.Port + 10000
		}
		if err := f.bus.Meet([]byte(ip), []byte(strconv.Itoa(seed.Port)), []byte(strconv.Itoa(cport))); err != nil {
			f.log.Debug("meeting a cluster seed", zap.String("addr", ip), zap.Error(err))
		}
	}
}

// seedUnresolved logs a seed name's lookup failure at WARN: the first one,
// then every seedWarnEvery while it lasts (debug in between).
func (f *Former) seedUnresolved(name string, err error) {
	if f.unresolved == nil {
		f.unresolved = map[string]time.Time{}
	}
	now := time.Now()
	if last, ok := f.unresolved[name]; ok && now.Sub(last) < seedWarnEvery {
		f.log.Debug("cluster seed does not resolve yet", zap.String("seed", name), zap.Error(err))
		return
	}
	f.unresolved[name] = now
	f.log.Warn("cluster seed does not resolve: this node cannot find the cluster through it",
		zap.String("seed", name), zap.Error(err))
}

// seedResolved notes that a name logged as unresolved resolves now.
func (f *Former) seedResolved(name string, addrs []string) {
	if _, ok := f.unresolved[name]; ok {
		delete(f.unresolved, name)
		f.log.Info("cluster seed resolves now", zap.String("seed", name), zap.Strings("addrs", addrs))
	}
}

// pickSeedAddr chooses one address of a seed's name (a name is one node):
// the first of this node's address family ("localhost" resolves to both
// 127.0.0.1 and ::1, and a MEET to the one the node does not listen on would
// linger in handshake), else the first.
func pickSeedAddr(addrs []string, myIP net.IP) string {
	wantV4 := myIP == nil || myIP.To4() != nil
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && (ip.To4() != nil) == wantV4 {
			return a
		}
	}
	return addrs[0]
}
