package gossip

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFailoverReplaySchedule replays one randomized schedule with logs:
// SHOAL_FAILOVER_SEED=<seed> go test -run TestFailoverReplaySchedule -v ./gossip/
func TestFailoverReplaySchedule(t *testing.T) {
	seed, err := strconv.ParseUint(os.Getenv("SHOAL_FAILOVER_SEED"), 10, 64)
	if err != nil {
		t.Skip("set SHOAL_FAILOVER_SEED to replay a schedule of TestFailoverRandomSchedules")
	}
	b := buildBase(t, 1+int(seed%2))
	v, won := runScheduleLog(t, b, seed, 15*time.Second, t.Logf)
	t.Logf("elections won: %d", won)
	require.Empty(t, v, "schedule seed %d", seed)
}

// The seeds that found bugs, replayed in every run: 29 (a replica's header
// epoch taken as its own), 706 (a restarted stale master voting).
func TestFailoverRegressionSchedules(t *testing.T) {
	for _, seed := range []uint64{29, 706} {
		b := buildBase(t, 1+int(seed%2))
		v, _ := runSchedule(t, b, seed, 15*time.Second)
		require.Empty(t, v, "schedule seed %d", seed)
	}
}
