package node

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/shoal-db/shoal/config"
)

// oom-score-adj (Redis's setOOMScoreAdj): while enabled, the process's
// /proc/self/oom_score_adj is oom-score-adj-values' master or replica value
// (relative: added to the score the process had when shoal first took
// control; absolute: as is), clamped to ±1000, updated when the role or the
// directives change; disabling it restores the score from before. The
// third value (Redis's fork child) has no process to apply to: shoal's
// saves and rewrites do not fork.
type oomScoreState struct {
	mu       sync.Mutex
	adjusted bool // shoal changed the score (base holds the original)
	base     int
	path     string // /proc/self/oom_score_adj (tests point it elsewhere)
}

// errOOMScore is CONFIG SET's failure text (updateOOMScoreAdj).
var errOOMScore = errors.New("Failed to set current oom_score_adj. Check server logs.")

// applyOOMScore writes the score for the node's current role.
func (s *Server) applyOOMScore() error {
	st := &s.oomScore
	st.mu.Lock()
	defer st.mu.Unlock()
	path := st.path
	if path == "" {
		path = "/proc/self/oom_score_adj"
	}
	mode := s.cfg.Int("oom-score-adj")
	var val int
	switch {
	case mode != config.OOMScoreAdjNo:
		if !st.adjusted {
			b, err := os.ReadFile(path)
			if err != nil {
				s.log.Warn("Unable to read oom_score_adj: " + syscallText(err))
				return errOOMScore
			}
			st.base, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			st.adjusted = true
		}
		class := 0 // master
		if s.repl.proxy.Load() {
			class = 1 // replica
		}
		val = s.cfg.OOMScoreAdjValues()[class]
		if mode == config.OOMScoreAdjRelative {
			val += st.base
		}
		val = min(max(val, -1000), 1000)
	case st.adjusted:
		st.adjusted = false
		val = st.base
	default:
		return nil
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(val)+"\n"), 0); err != nil {
		s.log.Warn("Unable to write oom_score_adj: " + syscallText(err))
		return errOOMScore
	}
	return nil
}

// registerOOMScoreHooks applies the score at start-up and on CONFIG SET.
func (s *Server) registerOOMScoreHooks() {
	for _, name := range []string{"oom-score-adj", "oom-score-adj-values"} {
		s.cfg.OnChange(name, func(string) error { return s.applyOOMScore() })
	}
	if err := s.applyOOMScore(); err != nil {
		s.log.Warn("Failed to set oom_score_adj at start-up")
	}
}
