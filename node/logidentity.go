package node

import (
	"sync/atomic"

	"github.com/shoal-db/shoal/gossip"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Every line the node logs carries who wrote it, under names an operator
// can search a fleet's logs by:
//
//	node_id        the cluster node ID (CLUSTER MYID, nodes.conf's myself)
//	               in cluster mode, else the run ID (INFO's run_id), both
//	               40 hex digits, read when the line is written (CLUSTER
//	               RESET HARD changes the node ID)
//	current_epoch  the cluster's current epoch as this node knows it
//	               (cluster mode only)
//	run_id         instead of node_id in cluster mode until nodes.conf is
//	               loaded (the first few start-up lines), so that node_id
//	               only ever holds the cluster node ID there
//
// Other nodes are logged under "peer" (package gossip), never "node_id".

// Log field names carried by every line of the node.
const (
	logFieldNodeID = "node_id"
	logFieldEpoch  = "current_epoch"
	logFieldRunID  = "run_id"
)

// logIdentity is what the identity fields are read from.
type logIdentity struct {
	runID   string
	cluster bool                       // cluster-enabled
	bus     atomic.Pointer[gossip.Bus] // set once the cluster bus exists
}

// fields returns the identity fields as of now. The bus's are read without
// its lock (gossip.Bus.Identity): the bus logs while holding it.
func (li *logIdentity) fields() []zapcore.Field {
	if b := li.bus.Load(); b != nil {
		if id, epoch := b.Identity(); id != "" {
			return []zapcore.Field{zap.String(logFieldNodeID, id), zap.Uint64(logFieldEpoch, epoch)}
		}
	}
	if li.cluster {
		return []zapcore.Field{zap.String(logFieldRunID, li.runID)}
	}
	return []zapcore.Field{zap.String(logFieldNodeID, li.runID)}
}

// withIdentity returns log with the identity fields added to every entry.
func withIdentity(log *zap.Logger, li *logIdentity) *zap.Logger {
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return &identityCore{Core: c, li: li}
	}))
}

// identityCore adds the identity fields at Write time, so they are current
// on every line (zap's With fields are fixed when the logger is made).
type identityCore struct {
	zapcore.Core
	li *logIdentity
}

func (c *identityCore) With(fields []zapcore.Field) zapcore.Core {
	return &identityCore{Core: c.Core.With(fields), li: c.li}
}

func (c *identityCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *identityCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	return c.Core.Write(ent, append(c.li.fields(), fields...))
}
