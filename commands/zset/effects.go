package zset

import "github.com/shoal-db/shoal/command"

// The words of the rewritten effects (read-only).
var (
	argZPOPMIN = []byte("ZPOPMIN")
	argZPOPMAX = []byte("ZPOPMAX")
)

// zpopEffect sets the effect of a pop from sorted set key: ZPOPMIN|ZPOPMAX
// key, with min(count, zlen) when the command counted (count ≥ 0).
func zpopEffect(c *command.Ctx, key []byte, max bool, count int64, zlen int) {
	cmd := argZPOPMIN
	if max {
		cmd = argZPOPMAX
	}
	c.PopEffect(cmd, key, count, zlen)
}
