package node

// TEMPORARY stand-in for the lead's snapshotRDB (node/snapshot.go on main),
// deleted when main is merged: it keeps the execution gate closed for the
// whole file, which gives the same point-in-time contract.

import (
	"fmt"
	"io"
	"time"

	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/store"
)

func (s *Server) snapshotRDB(w io.Writer, aux [][2]string, atStart func() [][2]string,
	cancelled func() bool) (keys int, err error) {
	release := (s.bindClient(&Client{srv: s})).closeGate()
	defer release()
	head := [][2]string{{"redis-ver", Version}, {"redis-bits", "64"}, {"ctime", fmt.Sprint(time.Now().Unix())}}
	head = append(head, aux...)
	if atStart != nil {
		head = append(head, atStart()...)
	}
	head = append(head, [2]string{"aof-base", "0"})
	fw := rdb.NewFileWriter(w, head...)
	for _, l := range s.tx.functions.sortedLibs() {
		fw.Function(l.code)
	}
	dbs, _, _ := s.ks.Stats()
	for _, dbStat := range dbs {
		db := s.ks.DB(dbStat.ID)
		fw.SelectDB(dbStat.ID, uint64(dbStat.Keys), uint64(dbStat.Expires))
		for slot := 0; slot < store.NumSlots; slot++ {
			if cancelled != nil && cancelled() {
				return keys, fmt.Errorf("snapshot cancelled")
			}
			if db.SlotSize(uint16(slot)) == 0 {
				continue
			}
			db.Lock(uint16(slot))
			db.ScanSlotLocked(uint16(slot), func(e *store.Entry) {
				fw.Entry(e)
				keys++
			})
			db.Unlock(uint16(slot))
		}
	}
	return keys, fw.Finish()
}
