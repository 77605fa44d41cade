package node

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"time"

	"github.com/shoal-db/shoal/command"
	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/store"
	"github.com/shoal-db/shoal/strconvx"
)

// The base as commands (aof-use-rdb-preamble no), as Redis's
// rewriteAppendOnlyFileRio writes it: a "#TS:" annotation first with
// aof-timestamp-enabled, FUNCTION LOAD for each library, then per database
// a SELECT and, per key, the commands that build it — SET; RPUSH, SADD,
// ZADD, HMSET with at most 64 elements each (AOF_REWRITE_ITEMS_PER_CMD);
// a stream's XADDs, XSETID, XGROUP CREATE, XCLAIM of each pending entry
// and XGROUP CREATECONSUMER of each consumer without one — then PEXPIREAT.
// The snapshot at S is taken as an RDB image (snapshotRDB, the one
// point-in-time mechanism) and converted key by key.

// aofItemsPerCmd is AOF_REWRITE_ITEMS_PER_CMD.
const aofItemsPerCmd = 64

// rdbToCommands writes the RDB image in rdbPath as commands to path.
func (a *aofState) rdbToCommands(rdbPath, path string) error {
	data, err := os.ReadFile(rdbPath)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(a.incrementalSync(f), 1<<20)
	w := &aofCmdWriter{w: bw, db: -1}
	if a.s.cfg.Bool("aof-timestamp-enabled") {
		w.raw("#TS:" + strconv.FormatInt(time.Now().Unix(), 10) + "\r\n")
	}
	err = rdb.LoadFileWith(data, command.RDBLimits(a.s.cfg), rdb.FileHandlers{
		// The libraries come first in the image, before any key.
		Function: func(code []byte) error {
			w.cmd("FUNCTION", "LOAD", string(code))
			return nil
		},
		Key: func(k *rdb.LoadedKey) error {
			if k.DB != w.db {
				w.cmd("SELECT", strconv.Itoa(k.DB))
				w.db = k.DB
			}
			w.object(k.Key, k.Obj)
			if k.ExpireAt != 0 {
				w.args = append(w.args[:0], []byte("PEXPIREAT"), k.Key, strconv.AppendInt(nil, k.ExpireAt, 10))
				w.flushArgs()
			}
			return w.err
		},
	})
	if err == nil {
		err = w.err
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
	}
	return err
}

// aofCmdWriter encodes commands to a buffered file.
type aofCmdWriter struct {
	w    *bufio.Writer
	db   int
	args [][]byte
	enc  []byte
	err  error
}

func (w *aofCmdWriter) raw(s string) {
	if w.err == nil {
		_, w.err = w.w.WriteString(s)
	}
}

func (w *aofCmdWriter) cmd(argv ...string) {
	w.enc = resp.AppendCommand(w.enc[:0], argv...)
	if w.err == nil {
		_, w.err = w.w.Write(w.enc)
	}
}

func (w *aofCmdWriter) flushArgs() {
	w.enc = resp.AppendCommand(w.enc[:0], w.args...)
	if w.err == nil {
		_, w.err = w.w.Write(w.enc)
	}
	w.args = w.args[:0]
}

// aofBatch writes "name key items..." commands of at most aofItemsPerCmd
// items each (an item is one or two arguments).
type aofBatch struct {
	w     *aofCmdWriter
	name  string
	key   []byte
	inCmd int
}

func (b *aofBatch) add(item ...[]byte) {
	if b.inCmd == 0 {
		b.w.args = append(b.w.args[:0], []byte(b.name), b.key)
	}
	// The iterators' slices are only valid until the next element (an
	// intset's members are formatted into one buffer): copied.
	for _, it := range item {
		b.w.args = append(b.w.args, bytes.Clone(it))
	}
	b.inCmd++
	if b.inCmd == aofItemsPerCmd {
		b.w.flushArgs()
		b.inCmd = 0
	}
}

func (b *aofBatch) done() {
	if b.inCmd > 0 {
		b.w.flushArgs()
		b.inCmd = 0
	}
}

// object writes the commands that build key's value.
func (w *aofCmdWriter) object(key []byte, o rdb.Object) {
	if o.Type == store.TypeString {
		w.args = append(w.args[:0], []byte("SET"), key, o.Str)
		w.flushArgs()
		return
	}
	switch v := o.Value.(type) {
	case *store.List:
		b := aofBatch{w: w, name: "RPUSH", key: key}
		for e := range v.All() {
			b.add(e)
		}
		b.done()
	case *store.Set:
		b := aofBatch{w: w, name: "SADD", key: key}
		for m := range v.All() {
			b.add(m)
		}
		b.done()
	case *store.ZSet:
		b := aofBatch{w: w, name: "ZADD", key: key}
		v.Each(false, func(member []byte, score float64) bool {
			b.add(strconvx.AppendDouble(nil, score), member)
			return true
		})
		b.done()
	case *store.Hash:
		b := aofBatch{w: w, name: "HMSET", key: key}
		for f, val := range v.All() {
			b.add(f, val)
		}
		b.done()
	case *store.Stream:
		w.stream(key, v)
	}
}

// stream is rewriteStreamObject.
func (w *aofCmdWriter) stream(key []byte, s *store.Stream) {
	id := func(x store.StreamID) []byte { return x.AppendTo(nil) }
	if s.Length() > 0 {
		it := s.Range(store.StreamID{}, store.MaxStreamID, false)
		for it.Next() {
			w.args = append(w.args[:0], []byte("XADD"), key, id(it.ID()))
			for it.NextField() {
				f, v := it.Field()
				w.args = append(w.args, f, v)
			}
			w.flushArgs()
		}
	} else {
		// XADD MAXLEN 0 makes the empty stream.
		w.cmd("XADD", string(key), "MAXLEN", "0", "0-1", "x", "y")
	}
	w.args = append(w.args[:0], []byte("XSETID"), key, id(s.LastID()),
		[]byte("ENTRIESADDED"), strconv.AppendUint(nil, s.EntriesAdded(), 10),
		[]byte("MAXDELETEDID"), id(s.MaxDeletedID()))
	w.flushArgs()
	for _, g := range s.Groups() {
		group := []byte(g.Name())
		w.args = append(w.args[:0], []byte("XGROUP"), []byte("CREATE"), key, group, id(g.LastID),
			[]byte("ENTRIESREAD"), strconv.AppendInt(nil, g.EntriesRead, 10))
		w.flushArgs()
		for _, c := range g.Consumers() {
			consumer := []byte(c.Name())
			if c.PendingLen() == 0 {
				w.args = append(w.args[:0], []byte("XGROUP"), []byte("CREATECONSUMER"), key, group, consumer)
				w.flushArgs()
				continue
			}
			g.EachConsumerPending(c, func(p store.PendingEntry) bool {
				w.args = append(w.args[:0], []byte("XCLAIM"), key, group, consumer, []byte("0"), id(p.ID),
					[]byte("TIME"), strconv.AppendInt(nil, p.DeliveryTime, 10),
					[]byte("RETRYCOUNT"), strconv.AppendUint(nil, p.DeliveryCount, 10),
					[]byte("JUSTID"), []byte("FORCE"))
				w.flushArgs()
				return true
			})
		}
	}
}
