package replication

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/store"
	"github.com/shoal-db/shoal/strconvx"
	"go.uber.org/zap"
)

// The master side of a fork-less full sync (DESIGN.md §5): a walker images
// every (db, slot) once into the replica's stream, at the stream position
// where it holds the slot's lock; an effect that touches walked and
// unwalked slots first images its unwalked ones. FullSyncs is the set of
// syncs in progress and their bookkeeping; the node supplies the keyspace,
// the key extraction of effect commands (SlotsOf) and its execution gate
// (Walk's hold).

// DBSlot names one slot of one database.
type DBSlot struct {
	DB   int
	Slot uint16
}

// SlotsOf appends to out the (db, slot) pairs one effect command touches
// when the stream is in database db (the node's key extraction). It is
// called under the Master's lock.
type SlotsOf func(db int, argv [][]byte, out []DBSlot) []DBSlot

// FullSync is one replica's full sync: which (db, slot) images were sent,
// and which slots a write reached the replica in before their image.
// link, walked and touched are guarded by the Master's lock.
type FullSync struct {
	link    *Link      // nil until the replica is attached
	walked  [][]bool   // [db][slot]: the image was sent
	touched [][]bool   // [db][slot]: a write reached the replica before its image
	syncs   *FullSyncs // the set it belongs to
}

// FullSyncs is the set of full syncs in progress. The feed checks Active
// with one atomic load (copy-on-write list).
type FullSyncs struct {
	m       *Master
	ks      *store.Keyspace
	slotsOf SlotsOf
	log     *zap.Logger

	mu   sync.Mutex // serialises changes of list
	list atomic.Pointer[[]*FullSync]
}

// NewFullSyncs returns the (empty) set of full syncs of m's replicas, over
// the keyspace ks.
func NewFullSyncs(m *Master, ks *store.Keyspace, slotsOf SlotsOf, log *zap.Logger) *FullSyncs {
	return &FullSyncs{m: m, ks: ks, slotsOf: slotsOf, log: log}
}

// Active reports whether a full sync is in progress.
func (s *FullSyncs) Active() bool { return s.list.Load() != nil }

// Begin starts a sync's bookkeeping, before its replica joins the stream,
// so that every write the replica receives is seen by it.
func (s *FullSyncs) Begin() *FullSync {
	n := s.ks.NumDBs()
	fs := &FullSync{walked: make([][]bool, n), touched: make([][]bool, n), syncs: s}
	s.mu.Lock()
	defer s.mu.Unlock()
	var next []*FullSync
	if cur := s.list.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, fs)
	s.list.Store(&next)
	return fs
}

// End forgets a sync (done, failed, or a partial resync after all).
func (s *FullSyncs) End(fs *FullSync) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var next []*FullSync
	if cur := s.list.Load(); cur != nil {
		for _, x := range *cur {
			if x != fs {
				next = append(next, x)
			}
		}
	}
	if len(next) == 0 {
		s.list.Store(nil)
		return
	}
	s.list.Store(&next)
}

// Attach gives the sync its replica's link (once attached to the Master).
func (fs *FullSync) Attach(link *Link) {
	fs.syncs.m.Locked(func() { fs.link = link })
}

// BeforeEffectLocked runs under the Master's lock before an effect enters
// the stream while full syncs are in progress. It records the slots the
// effect touches, and for a command that spans walked and unwalked slots
// (it read an unwalked slot to write a walked one, or the reverse), sends
// the unwalked slots' images first: the command holds their locks, and the
// replica, replaying the command after the images, computes what the master
// did.
//
// On a replica (chained replication) the master link calls it before
// applying a command, holding the replica's apply lock and no slot lock:
// lockSlots says to take each imaged slot's lock.
func (s *FullSyncs) BeforeEffectLocked(db int, cmds [][][]byte, lockSlots bool) {
	syncs := s.list.Load()
	if syncs == nil {
		return
	}
	var pairs []DBSlot
	for _, argv := range cmds {
		if len(argv) > 0 && argIs(argv[0], "swapdb") && len(argv) == 3 {
			a, okA := strconvx.ParseInt(argv[1])
			b, okB := strconvx.ParseInt(argv[2])
			if okA && okB {
				for _, fs := range *syncs {
					fs.swap(int(a), int(b))
				}
			}
			continue
		}
		pairs = s.slotsOf(db, argv, pairs)
	}
	if len(pairs) == 0 {
		return
	}
	for _, fs := range *syncs {
		if fs.link == nil {
			// Not attached yet: nothing is walked, the writes are noted.
			for _, p := range pairs {
				fs.row(p.DB)
				fs.touched[p.DB][p.Slot] = true
			}
			continue
		}
		if fs.link.ClosedLocked() {
			continue
		}
		mixed, anyWalked := false, false
		for _, p := range pairs {
			fs.row(p.DB)
			fs.touched[p.DB][p.Slot] = true
			if fs.walked[p.DB][p.Slot] {
				anyWalked = true
			}
		}
		if anyWalked {
			for _, p := range pairs {
				if !fs.walked[p.DB][p.Slot] {
					mixed = true
				}
			}
		}
		if !mixed {
			continue
		}
		for _, p := range pairs {
			if fs.walked[p.DB][p.Slot] {
				continue
			}
			// The command holds this slot's lock (it is one of its keys),
			// or, on a replica, nothing else writes it while the apply lock
			// is held.
			d := s.ks.DB(p.DB)
			if lockSlots {
				d.Lock(p.Slot)
			}
			img, _ := AppendSlotImage(nil, d, p.DB, p.Slot, nil)
			if lockSlots {
				d.Unlock(p.Slot)
			}
			fs.link.QueueImageLocked(img)
			fs.walked[p.DB][p.Slot] = true
		}
	}
}

// row makes sure db's rows exist (under the Master's lock).
func (fs *FullSync) row(db int) {
	if fs.walked[db] == nil {
		fs.walked[db] = make([]bool, store.NumSlots)
		fs.touched[db] = make([]bool, store.NumSlots)
	}
}

// swap follows SWAPDB: the replica swaps its databases, images included.
func (fs *FullSync) swap(a, b int) {
	if a < 0 || b < 0 || a >= len(fs.walked) || b >= len(fs.walked) {
		return
	}
	fs.row(a)
	fs.row(b)
	fs.walked[a], fs.walked[b] = fs.walked[b], fs.walked[a]
	fs.touched[a], fs.touched[b] = fs.touched[b], fs.touched[a]
}

// imageThrottle is how many bytes a syncing replica may have queued before
// the walker waits for its socket (images are not bounded by the output
// limit; the walker is).
const imageThrottle = 8 << 20

// Walk images every slot of every database into the sync's link, then
// marks the replica online, and ends the sync. hold is taken around each
// slot's image (the node's execution gate and the replica's apply lock):
// it returns its release.
func (fs *FullSync) Walk(hold func() (release func())) {
	s := fs.syncs
	ks := s.ks
	link := fs.link
	defer s.End(fs)
	start := time.Now()
	var buf, scratch []byte
	for dbID := 0; dbID < ks.NumDBs(); dbID++ {
		db := ks.ExistingDB(dbID)
		if db == nil {
			// Never used: every write to it is in the stream after the
			// empty RDB. (SWAPDB may bring a used one here later; it
			// carries its own rows.)
			s.m.Locked(func() {
				fs.row(dbID)
				for i := range fs.walked[dbID] {
					fs.walked[dbID][i] = true
				}
			})
			continue
		}
		for slot := 0; slot < store.NumSlots; slot++ {
			for link.Pending() > imageThrottle {
				select {
				case <-link.Done():
					return
				case <-time.After(time.Millisecond):
				}
			}
			// SWAPDB may have replaced the database under this number: take
			// the current one, under the slot lock, each time.
			db = ks.DB(dbID)
			release := hold()
			db.Lock(uint16(slot))
			// The image is built under the slot lock only; writers of other
			// slots wait for the fan-out lock just while it is queued.
			empty := db.SlotSize(uint16(slot)) == 0
			if !empty {
				buf, scratch = AppendSlotImage(buf[:0], db, dbID, uint16(slot), scratch)
			}
			s.m.Locked(func() {
				fs.row(dbID)
				if fs.walked[dbID][slot] || link.ClosedLocked() {
					return
				}
				fs.walked[dbID][slot] = true
				if empty {
					if !fs.touched[dbID][slot] {
						return // empty on both sides
					}
					buf, scratch = AppendSlotImage(buf[:0], db, dbID, uint16(slot), scratch)
				}
				link.QueueImageLocked(buf)
			})
			db.Unlock(uint16(slot))
			release()
			select {
			case <-link.Done():
				return
			default:
			}
		}
	}
	s.m.Locked(func() {
		link.QueueImageLocked(resp.AppendCommand(nil, ImageCommand, "DONE"))
	})
	link.Online()
	s.log.Info("Synchronization with replica succeeded (slot images sent)", zap.Duration("took", time.Since(start)))
}
