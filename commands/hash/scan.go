package hash

import (
	"github.com/shoal-db/shoal/command"
)

// HSCAN key cursor [MATCH pattern] [COUNT count]
func cmdHScan(c *command.Ctx, args [][]byte) {
	cursor, h, opts, ok := command.StartElemScan(c, args, readHash)
	if !ok {
		return
	}
	var res command.ElemScanResult
	if h.IsListpack() {
		for f, v := range h.All() {
			res.AddPair(&opts, f, v)
		}
		res.Reply(c, 0)
		return
	}
	// Fields and values both count, as in Redis (COUNT is doubled).
	want := 2 * opts.Count
	budget := want * 10
	for {
		cursor = h.ScanTable(cursor, func(f, v []byte) { res.AddPair(&opts, f, v) })
		if cursor == 0 || budget == 0 || res.Visited >= want {
			break
		}
		budget--
	}
	res.Reply(c, cursor)
}
