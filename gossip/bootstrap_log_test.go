package gossip

import (
	"context"
	"testing"

	"github.com/shoal-db/shoal/config"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A seed whose name does not resolve is logged at WARN with the name (it
// was at debug only: a pod's log ended at "Ready to accept connections"
// while its readiness said 503), and only once a minute while it lasts.
func TestUnresolvedSeedLoggedAtWarn(t *testing.T) {
	b, err := New(Config{Options: DefaultOptions(), IP: "127.0.0.1", Port: 7000, ClusterPort: 17000, Seed: 1})
	require.NoError(t, err)
	core, logs := observer.New(zapcore.DebugLevel)
	const name = "shoal-seed-that-does-not-exist.invalid" // RFC 6761: never resolves
	f := NewFormer(b, zap.New(core), []config.ClusterSeed{{Host: name, Port: 6379}}, 0, 0, func() bool { return true })
	f.meetSeeds(context.Background())
	f.meetSeeds(context.Background())
	warns := logs.FilterLevelExact(zapcore.WarnLevel).All()
	require.Len(t, warns, 1, "one WARN per minute per name")
	require.Equal(t, name, warns[0].ContextMap()["seed"])
	require.Len(t, logs.FilterLevelExact(zapcore.DebugLevel).FilterField(zap.String("seed", name)).All(), 1)
}
