package migrate

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/slots"
	"go.uber.org/zap"
)

// Operations and states as CLUSTER GETSLOTMIGRATIONS reports them.
const (
	OpExport = "EXPORT"
	OpImport = "IMPORT"

	StateConnecting = "connecting" // export: reaching the target
	StateSnapshot   = "snapshot"   // export: streaming slot images (and the effects of imaged slots)
	StateCatchUp    = "catch-up"   // export: waiting for the target to acknowledge the stream
	StatePaused     = "paused"     // export: writes to the slots paused for the flip
	StateImporting  = "importing"  // import: receiving the stream
	StateSuccess    = "success"
	StateFailed     = "failed"
	StateCancelled  = "cancelled"
)

// Job is one export or import. Its identity and slots never change; the
// state and the counters are safe to read at any time.
type Job struct {
	name           string
	op             string
	source, target string
	slots          []int
	set            slots.Bitmap
	created        time.Time

	mu      sync.Mutex // guards state, message, updated, pause
	state   string
	message string
	updated time.Time
	pause   time.Duration

	cancel     chan struct{}
	cancelOnce sync.Once

	// Export progress.
	imaged      [slots.Count]atomic.Bool // the slot's image is in the stream: forward its effects
	slotsImaged atomic.Int64
	keys        atomic.Int64
	keysTotal   atomic.Int64 // keys in the slots when the images began
	imageBytes  atomic.Int64 // argument bytes of the image commands sent
	effects     atomic.Int64

	m  *Manager
	st *stream // set before the effect feed is registered
}

func newJob(op, name, source, target string, list []int) *Job {
	j := &Job{name: name, op: op, source: source, target: target, slots: list,
		created: time.Now(), cancel: make(chan struct{}), state: StateConnecting}
	j.updated = j.created
	for _, s := range list {
		j.set.Set(s)
	}
	return j
}

func (j *Job) setState(state, msg string) {
	j.mu.Lock()
	j.state, j.message, j.updated = state, msg, time.Now()
	j.mu.Unlock()
}

// finish ends the job in a final state (once).
func (j *Job) finish(state, msg string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch j.state {
	case StateSuccess, StateFailed, StateCancelled:
		return false
	}
	j.state, j.message, j.updated = state, msg, time.Now()
	return true
}

func (j *Job) active() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	switch j.state {
	case StateSuccess, StateFailed, StateCancelled:
		return false
	}
	return true
}

func (j *Job) requestCancel() bool {
	did := false
	j.cancelOnce.Do(func() { close(j.cancel); did = true })
	return did
}

func (j *Job) cancelled() bool {
	select {
	case <-j.cancel:
		return true
	default:
		return false
	}
}

// Status is one job as CLUSTER GETSLOTMIGRATIONS shows it.
type Status struct {
	Name, Operation, SlotRanges, Source, Target, State, Message string
	CreateTime, LastUpdateTime                                  int64 // unix ms
	SlotsTotal, SlotsImaged, Keys, Effects                      int64
	KeysTotal, ImageBytes                                       int64
	PauseMillis                                                 int64
}

func (j *Job) status() Status {
	j.mu.Lock()
	defer j.mu.Unlock()
	return Status{Name: j.name, Operation: j.op, SlotRanges: formatRanges(j.slots), Source: j.source,
		Target: j.target, State: j.state, Message: j.message, CreateTime: j.created.UnixMilli(),
		LastUpdateTime: j.updated.UnixMilli(), SlotsTotal: int64(len(j.slots)), SlotsImaged: j.slotsImaged.Load(),
		Keys: j.keys.Load(), Effects: j.effects.Load(), KeysTotal: j.keysTotal.Load(), ImageBytes: j.imageBytes.Load(),
		PauseMillis: j.pause.Milliseconds()}
}

// Propagate is the job's write-effect feed: the effects of writes to its
// imaged slots go to the target, after those slots' images. It runs on the
// writer's goroutine with the written slot locked (node.EffectFeed).
func (j *Job) Propagate(db int, cmds [][][]byte) {
	if db != 0 {
		return // a cluster has only database 0
	}
	forward, flush := false, false
	for _, argv := range cmds {
		slot, fl := j.m.src.EffectSlot(argv)
		flush = flush || fl
		if slot >= 0 && j.set.Has(slot) && j.imaged[slot].Load() {
			forward = true
		}
	}
	switch {
	case forward:
		if j.st.enqueue(cmds...) {
			j.effects.Add(int64(len(cmds)))
		}
	case flush && j.slotsImaged.Load() > 0:
		j.st.enqueue([][]byte{[]byte("CLUSTER"), []byte("IMPORTSLOTS"), []byte("FLUSH"), []byte(j.name)})
	}
}

var errCancelled = errors.New("cancelled by CLUSTER CANCELSLOTMIGRATIONS")

// runExport is an export job's goroutine.
func (m *Manager) runExport(j *Job) {
	log := m.log.With(zap.String("job", j.name), zap.String("target", j.target))
	log.Info("slot migration started", zap.String("slots", formatRanges(j.slots)))
	err := m.export(j, log)
	if err != nil {
		state := StateFailed
		if errors.Is(err, errCancelled) {
			state = StateCancelled
		}
		j.finish(state, err.Error())
		log.Warn("slot migration failed; this node keeps the slots and their keys", zap.Error(err))
	}
	m.endMoving(j)
}

// export runs the job's phases; a nil error means the slots were handed
// over.
func (m *Manager) export(j *Job, log *zap.Logger) (err error) {
	addr, err := m.src.MasterAddr(j.target)
	if err != nil {
		return err
	}
	conn, err := m.src.Dial(addr)
	if err != nil {
		return fmt.Errorf("connecting to the target %s: %w", addr, err)
	}
	st := newStream(conn, m.opts.MaxQueued)
	j.st = st
	flipped := false
	defer func() {
		if err != nil && !flipped {
			m.src.RemoveEffectFeed(j)
			// Best effort: the target drops what it received. A broken
			// connection makes the target abort by itself.
			if st.enqueue(importCmd("ABORT", j.name)) {
				_ = st.waitAcked(st.enqueued(), time.Now().Add(2*time.Second))
			}
		}
		st.close()
	}()

	begin := append([][]byte{[]byte("CLUSTER"), []byte("IMPORTSLOTS"), []byte("BEGIN"), []byte(j.name),
		[]byte(j.source)}, rangeArgs(j.slots)...)
	st.enqueue(begin)
	if err := st.waitAcked(1, time.Now().Add(10*time.Second)); err != nil {
		return err
	}

	// Images, slot by slot; the feed forwards the effects of imaged slots.
	j.setState(StateSnapshot, "")
	m.src.AddEffectFeed(j)
	start := time.Now()
	lastLog := start
	total := m.src.KeysInSlots(j.slots)
	j.keysTotal.Store(total)
	emit := func(argv ...[][]byte) {
		var n int64
		for _, cmd := range argv {
			for _, a := range cmd {
				n += int64(len(a))
			}
		}
		j.imageBytes.Add(n)
		st.enqueue(argv...)
	}
	for i, s := range j.slots {
		if err := m.throttle(j, st); err != nil {
			return err
		}
		one := []uint16{uint16(s)}
		m.src.LockSlots(one)
		n := m.src.SlotImage(uint16(s), emit)
		j.imaged[s].Store(true)
		m.src.UnlockSlots(one)
		j.keys.Add(int64(n))
		j.slotsImaged.Add(1)
		if time.Since(lastLog) >= time.Second {
			lastLog = time.Now()
			log.Info("slot migration progress", zap.Int("slots_done", i+1), zap.Int("slots", len(j.slots)),
				zap.Int64("keys_done", j.keys.Load()), zap.Int64("keys_total", total),
				zap.String("keys_percent", percent(j.keys.Load(), total)), zap.Int64("bytes_done", j.imageBytes.Load()),
				zap.Int64("effects", j.effects.Load()), zap.Int64("acked", st.acked.Load()), zap.Int64("sent", st.enqueued()))
		}
	}
	log.Info("slot images sent", zap.Int64("keys", j.keys.Load()), zap.Int64("keys_total", total),
		zap.Int64("bytes", j.imageBytes.Load()), zap.Duration("took", time.Since(start)))

	// Catch up until the target is close behind, then pause and flip.
	j.setState(StateCatchUp, "")
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if j.cancelled() {
			return errCancelled
		}
		if err := st.err(); err != nil {
			return err
		}
		if st.queued() == 0 && st.enqueued()-st.acked.Load() <= m.opts.CatchUpLag {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("the target did not catch up with the stream in time")
		}
		t := time.NewTimer(20 * time.Millisecond)
		select {
		case <-st.ackWake:
		case <-j.cancel:
		case <-t.C:
		}
		t.Stop()
	}

	locked := make([]uint16, len(j.slots))
	for i, s := range j.slots {
		locked[i] = uint16(s)
	}
	j.setState(StatePaused, "")
	m.src.LockSlots(locked)
	pauseStart := time.Now()
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			m.src.UnlockSlots(locked)
			j.mu.Lock()
			j.pause = time.Since(pauseStart)
			j.mu.Unlock()
		}
	}
	defer unlock()
	all := st.enqueued()
	if err := st.waitAcked(all, pauseStart.Add(m.opts.PauseTimeout)); err != nil {
		return err
	}
	m.src.RemoveEffectFeed(j) // nothing more can be written to the slots here
	st.enqueue(importCmd("FINISH", j.name))
	ferr := st.waitAcked(all+1, time.Now().Add(m.opts.PauseTimeout))
	if msg := st.errReply.Load(); msg != nil {
		// The target refused the slots: it does not own them.
		return fmt.Errorf("the target refused the slots: %s", *msg)
	}
	// Either the target took the slots, or its answer was lost with the
	// connection. It has acknowledged every write, so handing the slots
	// over loses nothing in both cases, while keeping them could: writes
	// accepted here would be dropped once the target's newer epoch
	// arrives.
	flipped = true
	if gerr := m.src.GiveSlots(j.slots, j.target); gerr != nil {
		log.Error("giving the slots to the target in this node's table", zap.Error(gerr))
	}
	m.endMoving(j)
	unlock()
	m.src.DropSlots(j.slots)
	j.mu.Lock()
	pause := j.pause
	j.mu.Unlock()
	if ferr != nil {
		log.Error("the target's answer to the flip was lost; the slots were handed over anyway", zap.Error(ferr))
		j.finish(StateSuccess, "flip unconfirmed: "+ferr.Error())
	} else {
		j.finish(StateSuccess, "")
	}
	log.Info("slot migration finished", zap.String("slots", formatRanges(j.slots)), zap.Int64("keys", j.keys.Load()),
		zap.Int64("effects", j.effects.Load()), zap.Duration("write_pause", pause), zap.Duration("took", time.Since(j.created)))
	return nil
}

// throttle waits while the stream holds more than ImageHighWater bytes.
func (m *Manager) throttle(j *Job, st *stream) error {
	for {
		if j.cancelled() {
			return errCancelled
		}
		if err := st.err(); err != nil {
			return err
		}
		if st.queued() <= m.opts.ImageHighWater {
			return nil
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-j.cancel:
		case <-st.done:
		case <-t.C:
		}
		t.Stop()
	}
}

func importCmd(action, name string) [][]byte {
	return [][]byte{[]byte("CLUSTER"), []byte("IMPORTSLOTS"), []byte(action), []byte(name)}
}

// String is for logs.
func (s Status) String() string {
	return s.Name + " " + s.Operation + " " + s.SlotRanges + " " + s.State + " keys=" + strconv.FormatInt(s.Keys, 10)
}

// percent is done of total as "42.0%" (total counted at the start: writes
// during the job can take done past it, which is shown as 100%).
func percent(done, total int64) string {
	if total <= 0 || done >= total {
		return "100.0%"
	}
	return strconv.FormatFloat(float64(done)*100/float64(total), 'f', 1, 64) + "%"
}
