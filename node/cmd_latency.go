package node

// shoal does not record latency events yet: every event series is empty,
// which is what Redis reports before its first spike.

func latencyHandlers() map[string]HandlerFunc {
	return map[string]HandlerFunc{
		"latency|latest":    func(c *Client, args [][]byte) { c.Array(0) },
		"latency|history":   func(c *Client, args [][]byte) { c.Array(0) },
		"latency|reset":     func(c *Client, args [][]byte) { c.Int(0) },
		"latency|graph":     cmdLatencyGraph,
		"latency|doctor":    cmdLatencyDoctor,
		"latency|histogram": func(c *Client, args [][]byte) { c.Map(0) },
		"latency|help":      func(c *Client, args [][]byte) { c.ReplyHelp(args, latencyHelpLines) },
	}
}

var latencyHelpLines = []string{
	"DOCTOR",
	"    Return a human readable latency analysis report.",
	"GRAPH <event>",
	"    Return an ASCII latency graph for the <event> class.",
	"HISTORY <event>",
	"    Return time-latency samples for the <event> class.",
	"LATEST",
	"    Return the latest latency samples for all events.",
	"RESET [<event> ...]",
	"    Reset latency data of one or more <event> classes.",
	"    (default: reset all data for all event classes)",
	"HISTOGRAM [COMMAND ...]",
	"    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
	"    If no commands are specified then all histograms are replied.",
}

func cmdLatencyGraph(c *Client, args [][]byte) {
	c.Error("ERR No samples available for event '" + string(args[2]) + "'")
}

func cmdLatencyDoctor(c *Client, args [][]byte) {
	if c.srv.cfg.Int("latency-monitor-threshold") == 0 {
		c.Verbatim("I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this Redis instance. You may use \"CONFIG SET latency-monitor-threshold <milliseconds>.\" in order to enable it. If we weren't in a deep space mission I'd suggest to take a look at https://redis.io/topics/latency-monitor.\n", "txt")
		return
	}
	c.Verbatim("Dave, no latency spike was observed during the lifetime of this Redis instance, not in the slightest bit. I honestly think you ought to sit down calmly, take a stress pill, and think things over.\n", "txt")
}
