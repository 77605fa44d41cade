package node

import "time"

// cronFollower is periodic work on a goroutine of its own (the AOF's
// writes and fsyncs, the replication cron, the keep-alive of replicas
// waiting for their RDB) that runs on the server cron's wake-ups: the
// cron kicks it when its period is due, and its own timer fills in only
// when no kick came for a period and a half (DEBUG PAUSE-CRON does not
// hold it back, and an hz below its rate does not slow it). Each of these
// had a ticker of its own, every one a separate wake-up of the whole
// process (and of the Go runtime's sysmon thread with it) — an idle node
// woke twice as often as its cron. Now one timer serves them all.
type cronFollower struct {
	period time.Duration
	kicks  chan struct{}
	last   time.Time // when the cron last kicked; owned by the cron goroutine
}

// serverCrons are the cron's followers.
type serverCrons struct {
	aof       *cronFollower // aofState.cron
	repl      *cronFollower // replState.cron
	keepAlive *cronFollower // fullSyncer.keepAlive
}

func newServerCrons() serverCrons {
	return serverCrons{
		aof:       newCronFollower(aofCronPeriod),
		repl:      newCronFollower(time.Second),
		keepAlive: newCronFollower(time.Second),
	}
}

// due kicks the followers whose period has come (see cronFollower.due).
func (c serverCrons) due(now time.Time, cronPeriod time.Duration) {
	c.aof.due(now, cronPeriod)
	c.repl.due(now, cronPeriod)
	c.keepAlive.due(now, cronPeriod)
}

func newCronFollower(period time.Duration) *cronFollower {
	return &cronFollower{period: period, kicks: make(chan struct{}, 1)}
}

// due is called by the cron at each of its runs (cronPeriod apart): it
// kicks the follower when its period has come, give or take half a cron
// period. It never blocks.
func (f *cronFollower) due(now time.Time, cronPeriod time.Duration) {
	if now.Sub(f.last) < f.period-cronPeriod/2 {
		return
	}
	f.last = now
	select {
	case f.kicks <- struct{}{}:
	default: // one is pending already
	}
}

// run calls fn at each kick, or when none came for a period and a half,
// until stop is closed.
func (f *cronFollower) run(stop <-chan struct{}, fn func()) {
	t := time.NewTimer(f.period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			t.Reset(f.period)
		case <-f.kicks:
			t.Reset(f.period + f.period/2)
		}
		fn()
	}
}
