package node

import (
	"strconv"

	"github.com/shoal-db/shoal/replication"
	"github.com/shoal-db/shoal/store"
)

// Slot images (DESIGN.md §5). A full sync sends, for each slot of each
// database, "this slot is now exactly this" at the stream position where the
// slot was read under its lock:
//
//	REPLIMAGE <db> <slot> <payload>
//
// where payload is a sequence of RESP commands that rebuild the slot's keys
// from nothing (SET / RPUSH / HSET / SADD / ZADD, then PEXPIREAT). The
// replica empties the slot, runs the payload against db, and does not count
// the image's bytes in its replication offset (they are not in the master's
// backlog). "REPLIMAGE DONE" ends the full sync.

const imageCommand = "REPLIMAGE"

// imageBatch bounds the elements of one rebuilding command.
const imageBatch = 512

// appendSlotImage appends the REPLIMAGE command for one slot of db. The
// caller holds the slot's lock.
func appendSlotImage(dst []byte, db *store.DB, dbID int, slot uint16, scratch []byte) ([]byte, []byte) {
	payload := scratch[:0]
	now := db.Keyspace().Now()
	db.ScanSlotLocked(slot, func(e *store.Entry) {
		if e.ExpireAt() != 0 && now > e.ExpireAt() {
			return // logically expired: its DEL follows in the stream
		}
		payload = appendKeyImage(payload, e)
	})
	dst = replication.AppendCommand(dst, [][]byte{[]byte(imageCommand),
		strconv.AppendInt(nil, int64(dbID), 10), strconv.AppendInt(nil, int64(slot), 10), payload})
	return dst, payload
}

// appendKeyImage appends the commands that rebuild e.
func appendKeyImage(dst []byte, e *store.Entry) []byte {
	key := []byte(e.Key())
	switch e.Type() {
	case store.TypeString:
		dst = replication.AppendCommand(dst, [][]byte{[]byte("SET"), key, e.Bytes()})
	case store.TypeList:
		l := e.Value().(*store.List)
		argv := [][]byte{[]byte("RPUSH"), key}
		for v := range l.All() {
			argv = append(argv, v)
			if len(argv)-2 == imageBatch {
				dst = replication.AppendCommand(dst, argv)
				argv = argv[:2]
			}
		}
		if len(argv) > 2 {
			dst = replication.AppendCommand(dst, argv)
		}
	case store.TypeHash:
		h := e.Value().(*store.Hash)
		argv := [][]byte{[]byte("HSET"), key}
		for f, v := range h.All() {
			argv = append(argv, f, v)
			if len(argv)-2 >= 2*imageBatch {
				dst = replication.AppendCommand(dst, argv)
				argv = argv[:2]
			}
		}
		if len(argv) > 2 {
			dst = replication.AppendCommand(dst, argv)
		}
	case store.TypeSet:
		st := e.Value().(*store.Set)
		argv := [][]byte{[]byte("SADD"), key}
		for m := range st.All() {
			argv = append(argv, m)
			if len(argv)-2 == imageBatch {
				dst = replication.AppendCommand(dst, argv)
				argv = argv[:2]
			}
		}
		if len(argv) > 2 {
			dst = replication.AppendCommand(dst, argv)
		}
	case store.TypeZSet:
		z := e.Value().(*store.ZSet)
		argv := [][]byte{[]byte("ZADD"), key}
		z.Each(false, func(m []byte, score float64) bool {
			argv = append(argv, strconv.AppendFloat(nil, score, 'g', 17, 64), m)
			if len(argv)-2 >= 2*imageBatch {
				dst = replication.AppendCommand(dst, argv)
				argv = argv[:2]
			}
			return true
		})
		if len(argv) > 2 {
			dst = replication.AppendCommand(dst, argv)
		}
	default:
		// Streams have no rebuilding commands here yet: the DUMP payload
		// encoder (package rdb) will carry them as RESTORE.
		return dst
	}
	if at := e.ExpireAt(); at != 0 {
		dst = replication.AppendCommand(dst, [][]byte{[]byte("PEXPIREAT"), key, strconv.AppendInt(nil, at, 10)})
	}
	return dst
}
