package gossip

import (
	"os"
	"strconv"
	"testing"
	"time"
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
	t.Logf("elections won: %d; violation: %q", won, v)
}
