package set

import (
	"github.com/shoal-db/shoal/command"
)

// SSCAN key cursor [MATCH pattern] [COUNT count]
func cmdSScan(c *command.Ctx, args [][]byte) {
	cursor, s, opts, ok := command.StartElemScan(c, args, readSet)
	if !ok {
		return
	}
	var res command.ElemScanResult
	if s.IsIntset() {
		for m := range s.All() {
			res.AddMember(&opts, m)
		}
		res.Reply(c, 0)
		return
	}
	budget := opts.Count * 10
	for {
		cursor = s.ScanTable(cursor, func(m []byte) { res.AddMember(&opts, m) })
		if cursor == 0 || budget == 0 || res.Visited >= opts.Count {
			break
		}
		budget--
	}
	res.Reply(c, cursor)
}
