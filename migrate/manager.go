package migrate

import (
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/shoal-db/shoal/slots"
	"go.uber.org/zap"
)

// Options tune the export jobs (zero values take the defaults).
type Options struct {
	// MaxQueued fails a job whose stream holds more than this many bytes
	// not yet written to the target (default 512 MiB).
	MaxQueued int
	// ImageHighWater pauses imaging while the stream holds more than this
	// many bytes (default 16 MiB).
	ImageHighWater int
	// CatchUpLag is how many unacknowledged commands the target may be
	// behind when the write pause starts (default 2000).
	CatchUpLag int64
	// PauseTimeout bounds the write pause: a target that does not
	// acknowledge everything in time fails the job (default 10 s).
	PauseTimeout time.Duration
	// LogMax is how many finished jobs GETSLOTMIGRATIONS keeps (default 32).
	LogMax int
}

func (o *Options) defaults() {
	if o.MaxQueued <= 0 {
		o.MaxQueued = 512 << 20
	}
	if o.ImageHighWater <= 0 {
		o.ImageHighWater = 16 << 20
	}
	if o.CatchUpLag <= 0 {
		o.CatchUpLag = 2000
	}
	if o.PauseTimeout <= 0 {
		o.PauseTimeout = 10 * time.Second
	}
	if o.LogMax <= 0 {
		o.LogMax = 32
	}
}

// Manager runs a node's export jobs and records its import sessions.
//
// Concurrency: every method is safe for concurrent use. Each export job
// runs on a goroutine of its own; Close cancels them and waits.
type Manager struct {
	src  Source
	tgt  Target
	log  *zap.Logger
	opts Options

	mu     sync.Mutex
	jobs   []*Job       // in creation order: active ones and the last finished ones
	moving slots.Bitmap // the slots of the active exports
	closed bool
	wg     sync.WaitGroup
}

// NewManager returns a manager for a node.
func NewManager(src Source, tgt Target, log *zap.Logger, opts Options) *Manager {
	if log == nil {
		log = zap.NewNop()
	}
	opts.defaults()
	return &Manager{src: src, tgt: tgt, log: log, opts: opts}
}

func newJobName() string {
	var b [20]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Start validates every requested export and starts them all, or none:
// the target must be another known master, every slot served here and in
// no other active job.
func (m *Manager) Start(specs []JobSpec) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errors.New("ERR the server is shutting down")
	}
	me := m.src.MyID()
	for _, sp := range specs {
		if sp.Target == me {
			return errors.New("ERR Can't migrate slots to myself")
		}
		if _, err := m.src.MasterAddr(sp.Target); err != nil {
			return err
		}
		for _, s := range sp.Slots {
			if !m.src.OwnsSlot(s) {
				return fmt.Errorf("ERR I'm not the owner of hash slot %d", s)
			}
			if m.moving.Has(s) {
				return fmt.Errorf("ERR Slot %d is already being migrated", s)
			}
			for _, j := range m.jobs {
				if j.active() && j.op == OpImport && j.set.Has(s) {
					return fmt.Errorf("ERR Slot %d is being imported", s)
				}
			}
		}
	}
	for _, sp := range specs {
		j := newJob(OpExport, newJobName(), me, sp.Target, sp.Slots)
		j.m = m
		m.jobs = append(m.jobs, j)
		for _, s := range sp.Slots {
			m.moving.Set(s)
		}
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.runExport(j)
		}()
	}
	m.trimLocked()
	return nil
}

// endMoving takes a finished export's slots out of the moving set.
func (m *Manager) endMoving(j *Job) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range j.slots {
		m.moving.Clear(s)
	}
	m.trimLocked()
}

// trimLocked drops the oldest finished jobs beyond LogMax.
func (m *Manager) trimLocked() {
	finished := 0
	for _, j := range m.jobs {
		if !j.active() {
			finished++
		}
	}
	if finished <= m.opts.LogMax {
		return
	}
	kept := m.jobs[:0]
	for _, j := range m.jobs {
		if !j.active() && finished > m.opts.LogMax {
			finished--
			continue
		}
		kept = append(kept, j)
	}
	clear(m.jobs[len(kept):])
	m.jobs = kept
}

// Cancel cancels every active export job started on this node and
// returns how many it cancelled.
func (m *Manager) Cancel() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, j := range m.jobs {
		if j.op == OpExport && j.active() && j.requestCancel() {
			n++
		}
	}
	return n
}

// Jobs returns the status of the active and recently finished jobs, oldest
// first.
func (m *Manager) Jobs() []Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Status, len(m.jobs))
	for i, j := range m.jobs {
		out[i] = j.status()
	}
	return out
}

// Close cancels the active exports and waits for their goroutines.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	for _, j := range m.jobs {
		if j.op == OpExport {
			j.requestCancel()
		}
	}
	m.mu.Unlock()
	m.wg.Wait()
}

// Import is one import session, held by the connection the source streams
// on. Slots is immutable.
type Import struct {
	job *Job
	// Slots are the slots the session's connection may write.
	Slots slots.Bitmap
}

// BeginImport starts an import of list from source (CLUSTER IMPORTSLOTS
// BEGIN): stale keys of the slots are dropped and an older session on any
// of them is aborted.
func (m *Manager) BeginImport(name, source string, list []int) (*Import, error) {
	if err := m.tgt.CanImport(source, list); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, errors.New("ERR the server is shutting down")
	}
	j := newJob(OpImport, name, source, m.tgt.MyID(), list)
	for _, old := range m.jobs {
		if old.op == OpImport && old.active() && overlaps(&old.set, list) {
			old.finish(StateFailed, "superseded by import "+name)
		}
	}
	m.tgt.DropSlots(list)
	m.jobs = append(m.jobs, j)
	j.setState(StateImporting, "")
	m.trimLocked()
	m.log.Info("slot import started", zap.String("job", name), zap.String("source", source),
		zap.String("slots", formatRanges(list)))
	return &Import{job: j, Slots: j.set}, nil
}

func overlaps(b *slots.Bitmap, list []int) bool {
	for _, s := range list {
		if b.Has(s) {
			return true
		}
	}
	return false
}

// Active reports whether the session can still take writes.
func (imp *Import) Active() bool { return imp != nil && imp.job.active() }

// Name is the session's job name.
func (imp *Import) Name() string { return imp.job.name }

// FinishImport makes this node the owner of the session's slots.
func (m *Manager) FinishImport(imp *Import) error {
	if !imp.Active() {
		return errors.New("ERR No such active slot import")
	}
	if err := m.tgt.TakeSlots(imp.job.slots); err != nil {
		m.AbortImport(imp, err.Error())
		return err
	}
	imp.job.finish(StateSuccess, "")
	m.log.Info("slot import finished: this node now owns the slots", zap.String("job", imp.job.name),
		zap.String("slots", formatRanges(imp.job.slots)))
	m.mu.Lock()
	m.trimLocked()
	m.mu.Unlock()
	return nil
}

// AbortImport drops what the session imported.
func (m *Manager) AbortImport(imp *Import, reason string) {
	if !imp.Active() {
		return
	}
	imp.job.finish(StateFailed, reason)
	m.tgt.DropSlots(imp.job.slots)
	m.log.Warn("slot import aborted, imported keys dropped", zap.String("job", imp.job.name),
		zap.String("reason", reason))
}

// FlushImport drops the keys imported so far (the source flushed its
// database).
func (m *Manager) FlushImport(imp *Import) {
	if imp.Active() {
		m.tgt.DropSlots(imp.job.slots)
	}
}
