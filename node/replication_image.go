package node

import (
	"strconv"

	"github.com/shoal-db/shoal/rdb"
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
// from nothing (SET and PEXPIREAT for strings, RESTORE of the DUMP payload
// for every other type). The
// replica empties the slot, runs the payload against db, and does not count
// the image's bytes in its replication offset (they are not in the master's
// backlog). "REPLIMAGE DONE" ends the full sync.

const imageCommand = "REPLIMAGE"

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

// appendKeyImage appends the commands that rebuild e: SET (and PEXPIREAT)
// for a string; for every other type RESTORE of its DUMP payload (package
// rdb) with REPLACE ABSTTL, which keeps the exact encoding, stream consumer
// groups and pending entries included.
func appendKeyImage(dst []byte, e *store.Entry) []byte {
	key := []byte(e.Key())
	at := e.ExpireAt()
	if e.Type() == store.TypeString {
		dst = replication.AppendCommand(dst, [][]byte{[]byte("SET"), key, e.Bytes()})
		if at != 0 {
			dst = replication.AppendCommand(dst, [][]byte{[]byte("PEXPIREAT"), key, strconv.AppendInt(nil, at, 10)})
		}
		return dst
	}
	return replication.AppendCommand(dst, [][]byte{[]byte("RESTORE"), key, strconv.AppendInt(nil, at, 10),
		rdb.DumpPayload(e), []byte("REPLACE"), []byte("ABSTTL")})
}
