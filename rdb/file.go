package rdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/shoal-db/shoal/store"
)

// RDB files (rdb.c rdbSaveRio / rdbLoadRio):
//
//	"REDIS0010" (AUX name value)* (SELECTDB n RESIZEDB keys expires
//	([EXPIRETIME_MS t] type key value)*)* EOF crc64
//
// FileWriter writes what Redis 7.0 writes (without LRU/LFU opcodes and
// function libraries); LoadFile reads files of RDB versions 1 to 10.

// File opcodes (rdb.h RDB_OPCODE_*).
const (
	opFunction2   = 245
	opFunction    = 246
	opModuleAux   = 247
	opIdle        = 248
	opFreq        = 249
	opAux         = 250
	opResizeDB    = 251
	opExpireMS    = 252
	opExpireSecs  = 253
	opSelectDB    = 254
	opEOF         = 255
	fileFlushSize = 64 << 10
)

// FileWriter streams an RDB file to w. Entries are appended under their
// slot lock by the caller; the writer itself is used by one goroutine.
type FileWriter struct {
	w   io.Writer
	enc Encoder
	buf []byte
	tmp []byte // one value, before the key is put between type and value
	crc uint64 // Redis's CRC-64 of what was written so far
	err error
}

// NewFileWriter starts a file encoded by enc: the magic and version, then
// the given auxiliary fields (name, value pairs such as "redis-ver",
// "7.0.15").
func NewFileWriter(w io.Writer, enc Encoder, aux ...[2]string) *FileWriter {
	fw := &FileWriter{w: w, enc: enc, buf: make([]byte, 0, 2*fileFlushSize)}
	fw.buf = fmt.Appendf(fw.buf, "REDIS%04d", Version)
	for _, kv := range aux {
		fw.buf = append(fw.buf, opAux)
		fw.buf = enc.str(fw.buf, []byte(kv[0]))
		fw.buf = enc.str(fw.buf, []byte(kv[1]))
	}
	return fw
}

// Flush writes what is buffered now (the writer otherwise writes in
// fileFlushSize pieces): a diskless full sync sends the file's head at
// once, so its replica learns the transfer began.
func (fw *FileWriter) Flush() error {
	fw.flush()
	return fw.err
}

func (fw *FileWriter) flush() {
	if fw.err != nil || len(fw.buf) == 0 {
		return
	}
	fw.crc = crc64Update(fw.crc, fw.buf)
	_, fw.err = fw.w.Write(fw.buf)
	fw.buf = fw.buf[:0]
}

// Function appends one function library's code (RDB_OPCODE_FUNCTION2);
// Redis writes them after the auxiliary fields, before the databases.
func (fw *FileWriter) Function(code []byte) {
	fw.buf = append(fw.buf, opFunction2)
	fw.buf = fw.enc.str(fw.buf, code)
	if len(fw.buf) >= fileFlushSize {
		fw.flush()
	}
}

// SelectDB starts database db, with its key and expiring-key counts as the
// RESIZEDB hint.
func (fw *FileWriter) SelectDB(db int, keys, expires uint64) {
	fw.buf = append(fw.buf, opSelectDB)
	fw.buf = appendLen(fw.buf, uint64(db))
	fw.buf = append(fw.buf, opResizeDB)
	fw.buf = appendLen(fw.buf, keys)
	fw.buf = appendLen(fw.buf, expires)
}

// Entry appends one key: its expiry, if any, then type, key and value.
// The caller holds e's slot lock.
func (fw *FileWriter) Entry(e *store.Entry) {
	fw.buf, fw.tmp = fw.enc.AppendEntry(fw.buf, fw.tmp, e)
	if cap(fw.tmp) > 4*fileFlushSize {
		fw.tmp = nil // do not keep a big value's buffer
	}
	if len(fw.buf) >= fileFlushSize {
		fw.flush()
	}
}

// AppendEntry appends one key as a file holds it (expiry, type, key,
// value) to dst; scratch is a reusable buffer for the value, returned
// grown. The caller holds e's slot lock.
func (en Encoder) AppendEntry(dst, scratch []byte, e *store.Entry) ([]byte, []byte) {
	if e.Type() == store.TypeString {
		return en.AppendStringEntry(dst, e.ExpireAt(), []byte(e.Key()), e.Bytes()), scratch
	}
	if at := e.ExpireAt(); at != 0 {
		dst = append(dst, opExpireMS)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(at))
	}
	// AppendValue writes type + value; the key goes in between.
	scratch = en.AppendValue(scratch[:0], e)
	dst = append(dst, scratch[0])
	dst = en.str(dst, []byte(e.Key()))
	return append(dst, scratch[1:]...), scratch
}

// AppendStringEntry appends a string key as AppendEntry does, from its
// expiry (0: none), key and value.
func (en Encoder) AppendStringEntry(dst []byte, expireAt int64, key, val []byte) []byte {
	if expireAt != 0 {
		dst = append(dst, opExpireMS)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(expireAt))
	}
	dst = en.str(append(dst, TypeString), key)
	return en.str(dst, val)
}

// StringEntry appends one string key from its expiry (0: none), key and
// value, as Entry appends a string entry.
func (fw *FileWriter) StringEntry(expireAt int64, key, val []byte) {
	fw.buf = fw.enc.AppendStringEntry(fw.buf, expireAt, key, val)
	if len(fw.buf) >= fileFlushSize {
		fw.flush()
	}
}

// SelectDBAgain switches back to database db without a RESIZEDB hint: a
// point-in-time snapshot captures slots in any order, so one database's
// keys may come in several runs (Redis's loader takes SELECTDB anywhere).
func (fw *FileWriter) SelectDBAgain(db int) {
	fw.buf = append(fw.buf, opSelectDB)
	fw.buf = appendLen(fw.buf, uint64(db))
}

// Entries appends keys already encoded by AppendEntry.
func (fw *FileWriter) Entries(p []byte) {
	if len(fw.buf)+len(p) >= fileFlushSize {
		fw.flush()
		if len(p) >= fileFlushSize {
			fw.crc = crc64Update(fw.crc, p)
			if fw.err == nil {
				_, fw.err = fw.w.Write(p)
			}
			return
		}
	}
	fw.buf = append(fw.buf, p...)
}

// Finish writes EOF and the checksum and reports the first write error.
func (fw *FileWriter) Finish() error {
	fw.buf = append(fw.buf, opEOF)
	fw.flush()
	if fw.err != nil {
		return fw.err
	}
	var sum [8]byte
	binary.LittleEndian.PutUint64(sum[:], fw.crc)
	_, fw.err = fw.w.Write(sum[:])
	return fw.err
}

// LoadedKey is one key read from a file. Key is only valid during the
// callback; Obj belongs to the callee.
type LoadedKey struct {
	DB       int
	Key      []byte
	Obj      Object
	ExpireAt int64 // unix ms, 0 = none
	IdleSecs int64 // from RDB_OPCODE_IDLE, -1 if absent
	Freq     int   // from RDB_OPCODE_FREQ, -1 if absent
	// Offset is how many bytes of the file have been read once this key
	// was (loading progress, INFO loading_loaded_bytes).
	Offset int64
}

// ErrFileVersion is a file of an RDB version this reader cannot load.
var ErrFileVersion = errors.New("rdb: can't handle RDB format version")

// FileHandlers receive what LoadFileWith reads; an error stops the load.
type FileHandlers struct {
	Key func(k *LoadedKey) error
	// Function receives each function library's code (it may keep it);
	// nil skips them.
	Function func(code []byte) error
	// Aux receives each auxiliary field (only valid during the call); nil
	// skips them.
	Aux func(name, value []byte) error
}

// LoadFile reads a whole RDB file of version 1 to 10 and calls fn for each
// key in file order (function libraries are skipped).
func LoadFile(data []byte, lim Limits, fn func(k *LoadedKey) error) error {
	return LoadFileWith(data, lim, FileHandlers{Key: fn})
}

// LoadFileWith reads a whole RDB file of version 1 to 10 and hands each key
// and function library (and auxiliary field) to h in file order;
// module data and the pre-GA function format fail the load. A wrong
// checksum (when the file has one) fails it too. Bounds are as in
// DecodeValue: corrupt files yield ErrBadData, never a panic.
func LoadFileWith(data []byte, lim Limits, h FileHandlers) error {
	_, err := LoadPrefixWith(data, lim, h)
	return err
}

// LoadPrefixWith is LoadFileWith for an RDB image followed by other data
// (an AOF base with its command tail): it returns how many bytes the
// image took, through its EOF opcode and checksum.
func LoadPrefixWith(data []byte, lim Limits, h FileHandlers) (int, error) {
	return loadFile(data, lim, h)
}

func loadFile(data []byte, lim Limits, h FileHandlers) (int, error) {
	fn := h.Key
	if lim.MaxString <= 0 {
		lim.MaxString = DefaultLimits().MaxString
	}
	if len(data) < 9 || string(data[:5]) != "REDIS" {
		return 0, ErrBadData
	}
	ver := 0
	for _, c := range data[5:9] {
		if c < '0' || c > '9' {
			return 0, ErrBadData
		}
		ver = ver*10 + int(c-'0')
	}
	if ver < 1 || ver > Version {
		return 0, ErrFileVersion
	}
	r := &reader{b: data, pos: 9, maxAlloc: lim.MaxString}
	k := LoadedKey{IdleSecs: -1, Freq: -1}
	for {
		op, err := r.byte()
		if err != nil {
			return 0, err
		}
		switch op {
		case opExpireSecs:
			b, err := r.take(4)
			if err != nil {
				return 0, err
			}
			k.ExpireAt = int64(binary.LittleEndian.Uint32(b)) * 1000
			continue
		case opExpireMS:
			ms, err := r.millis()
			if err != nil {
				return 0, err
			}
			k.ExpireAt = ms
			continue
		case opIdle:
			n, err := r.length()
			if err != nil {
				return 0, err
			}
			k.IdleSecs = int64(min(n, 1<<40))
			continue
		case opFreq:
			b, err := r.byte()
			if err != nil {
				return 0, err
			}
			k.Freq = int(b)
			continue
		case opSelectDB:
			n, err := r.length()
			if err != nil {
				return 0, err
			}
			if n > 1<<20 {
				return 0, ErrBadData
			}
			k.DB = int(n)
			continue
		case opResizeDB:
			if _, err := r.length(); err != nil {
				return 0, err
			}
			if _, err := r.length(); err != nil {
				return 0, err
			}
			continue
		case opAux:
			name, err := r.str()
			if err != nil {
				return 0, err
			}
			value, err := r.str()
			if err != nil {
				return 0, err
			}
			if h.Aux != nil {
				if err := h.Aux(name, value); err != nil {
					return 0, err
				}
			}
			continue
		case opFunction2:
			code, err := r.str()
			if err != nil {
				return 0, err
			}
			if h.Function != nil {
				if err := h.Function(ownedCopy(code)); err != nil {
					return 0, err
				}
			}
			continue
		case opFunction, opModuleAux:
			return 0, ErrBadData
		case opEOF:
			if ver >= 5 {
				b, err := r.take(8)
				if err != nil {
					return 0, err
				}
				got := binary.LittleEndian.Uint64(b)
				if want := CRC64(data[:r.pos-8]); got != 0 && got != want {
					return 0, &FileChecksumError{Expected: want, Got: got}
				}
			}
			return r.pos, nil
		}
		key, err := r.str()
		if err != nil {
			return 0, err
		}
		k.Key = append(k.Key[:0], key...)
		if k.Obj, err = decodeObject(r, op, lim); err != nil {
			return 0, err
		}
		k.Offset = int64(r.pos)
		if err := fn(&k); err != nil {
			return 0, err
		}
		k = LoadedKey{DB: k.DB, Key: k.Key[:0], IdleSecs: -1, Freq: -1}
	}
}
