package command

import (
	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/rdb"
)

// RDBLimits returns the thresholds a restored value is encoded by: the
// server's current *-max-listpack-* settings, as if its elements had been
// written here one by one (RESTORE, loading an RDB file, a replica's slot
// images).
func RDBLimits(cfg *config.Config) rdb.Limits {
	lim := rdb.Limits{
		HashMaxListpackEntries: cfg.Int("hash-max-listpack-entries"),
		HashMaxListpackValue:   cfg.Int("hash-max-listpack-value"),
		SetMaxIntsetEntries:    cfg.Int("set-max-intset-entries"),
		ZSetMaxListpackEntries: cfg.Int("zset-max-listpack-entries"),
		ZSetMaxListpackValue:   cfg.Int("zset-max-listpack-value"),
		ListMaxListpackSize:    cfg.Int("list-max-listpack-size"),
		StreamNodeMaxBytes:     cfg.Int("stream-node-max-bytes"),
		StreamNodeMaxEntries:   cfg.Int("stream-node-max-entries"),
		MaxString:              int(cfg.Int("proto-max-bulk-len")),
	}
	return lim
}
