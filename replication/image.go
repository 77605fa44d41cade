package replication

import (
	"bytes"
	"strconv"
	"time"

	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/store"
	"github.com/shoal-db/shoal/strconvx"
)

// Slot images (DESIGN.md §5). A full sync sends, for each slot of each
// database, "this slot is now exactly this" at the stream position where the
// slot was read under its lock:
//
//	REPLIMAGE <db> <slot> <payload>
//
// The payload is a sequence of RESP bulk strings, three per key: the key,
// its absolute expiry in unix ms (0 = none), and its value: 'S' followed by
// a string's bytes, or 'R' followed by the value in RDB form (package rdb:
// type byte and object, stream groups and pending entries included). The
// replica replaces the slot with the image under the slot's lock, so its
// readers never see half of it, and does not count the image's bytes in its
// replication offset (they are not in the master's backlog).
// "REPLIMAGE DONE" ends the full sync.

// ImageCommand is the stream command that carries a slot image.
const ImageCommand = "REPLIMAGE"

// AuxSlotImages is the auxiliary field of a shoal master's full-sync RDB
// payload that says slot images follow in the stream ("REPLIMAGE DONE"
// ends the sync). A redis-server replica ignores unknown fields.
const AuxSlotImages = "shoal-slot-images"

// AuxKeys is the auxiliary field of a shoal master's full-sync payload that
// counts the keys its slot images will bring (the data set's size at the
// sync's instant). A replica holding keys refuses a sync that brings none
// from a master that restarted without its data (EmptyHistoryGuard).
const AuxKeys = "shoal-keys"

// SyncPreamble returns a full sync's RDB payload: no keys (they follow as
// slot images), the function libraries' code (Redis's RDB carries them), and
// repl-stream-db, the database the stream is in at the sync's offset (a
// proxying replica's stream does not start with SELECT). version is the
// redis-ver field; aux are more auxiliary fields (AuxKeys).
func SyncPreamble(version string, libs [][]byte, streamDB int, aux ...[2]string) []byte {
	var buf bytes.Buffer
	fields := append([][2]string{
		{"redis-ver", version},
		{"redis-bits", "64"},
		{"ctime", strconv.FormatInt(time.Now().Unix(), 10)},
		{"repl-stream-db", strconv.Itoa(streamDB)},
		{AuxSlotImages, "1"},
	}, aux...)
	fw := rdb.NewFileWriter(&buf, fields...)
	for _, code := range libs {
		fw.Function(code)
	}
	_ = fw.Finish() // a bytes.Buffer does not fail
	return buf.Bytes()
}

// AppendSlotImage appends the REPLIMAGE command for one slot of db (number
// dbID) to dst, building the payload in scratch; it returns both buffers for
// reuse. The caller holds the slot's lock.
func AppendSlotImage(dst []byte, db *store.DB, dbID int, slot uint16, scratch []byte) ([]byte, []byte) {
	payload := scratch[:0]
	now := db.Keyspace().Now()
	db.ScanSlotLocked(slot, func(e *store.Entry) {
		if e.ExpireAt() != 0 && now > e.ExpireAt() && !db.Keyspace().ReplicaMode() {
			return // logically expired: its DEL follows in the stream
		}
		payload = appendKeyImage(payload, e)
	})
	dst = resp.AppendCommand(dst, []byte(ImageCommand),
		strconv.AppendInt(nil, int64(dbID), 10), strconv.AppendInt(nil, int64(slot), 10), payload)
	return dst, payload
}

// appendKeyImage appends one key's three bulks.
func appendKeyImage(dst []byte, e *store.Entry) []byte {
	dst = appendBulk(dst, []byte(e.Key()))
	dst = appendBulk(dst, strconv.AppendInt(nil, e.ExpireAt(), 10))
	if e.Type() == store.TypeString {
		v := e.Bytes()
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(v)+1), 10)
		dst = append(dst, '\r', '\n', 'S')
		dst = append(dst, v...)
		return append(dst, '\r', '\n')
	}
	return appendBulk(dst, rdb.AppendValue([]byte{'R'}, e))
}

func appendBulk(dst, b []byte) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(b)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, b...)
	return append(dst, '\r', '\n')
}

// ApplySlotImage replaces one slot of db with an image's payload, under the
// slot's lock; lim are the encoding thresholds of restored values. A
// malformed payload is ErrProtocol (the link drops and the replica syncs
// again).
func ApplySlotImage(db *store.DB, slot uint16, payload []byte, lim rdb.Limits) error {
	one := []uint16{slot}
	db.Lock(slot)
	defer db.Unlock(slot)
	db.SeeExpired(one, true) // keys the master keeps are live here too
	defer db.SeeExpired(one, false)
	db.FlushSlotLocked(slot)
	p := payload
	for len(p) > 0 {
		var key, at, val []byte
		var ok bool
		if key, p, ok = cutBulk(p); !ok {
			return ErrProtocol
		}
		if at, p, ok = cutBulk(p); !ok {
			return ErrProtocol
		}
		if val, p, ok = cutBulk(p); !ok || len(val) == 0 {
			return ErrProtocol
		}
		expireAt, ok := strconvx.ParseInt(at)
		if !ok {
			return ErrProtocol
		}
		var e *store.Entry
		switch val[0] {
		case 'S':
			e = db.SetString(key, val[1:], false)
		case 'R':
			obj, n, err := rdb.DecodeValue(val[1:], lim)
			if err != nil || n != len(val)-1 {
				return ErrProtocol
			}
			e = obj.SetIn(db, key)
		default:
			return ErrProtocol
		}
		if expireAt != 0 {
			db.SetExpire(key, e, expireAt)
		}
	}
	return nil
}

// cutBulk splits one "$<n>\r\n<n bytes>\r\n" off p.
func cutBulk(p []byte) (bulk, rest []byte, ok bool) {
	if len(p) < 4 || p[0] != '$' {
		return nil, nil, false
	}
	i := 1
	n := 0
	for ; i < len(p) && p[i] != '\r'; i++ {
		if p[i] < '0' || p[i] > '9' || n > len(p) {
			return nil, nil, false
		}
		n = n*10 + int(p[i]-'0')
	}
	if i == 1 || i+1 >= len(p) || p[i+1] != '\n' {
		return nil, nil, false
	}
	start := i + 2
	if n > len(p)-start-2 || p[start+n] != '\r' || p[start+n+1] != '\n' {
		return nil, nil, false
	}
	return p[start : start+n], p[start+n+2:], true
}
