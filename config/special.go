package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// SaveParam is one "save <seconds> <changes>" point.
type SaveParam struct {
	Seconds int64
	Changes int64
}

// ClientBufferLimit is one class of client-output-buffer-limit.
type ClientBufferLimit struct {
	HardBytes   uint64
	SoftBytes   uint64
	SoftSeconds int64
}

type replicaOf struct {
	host string
	port int
	set  bool
}

// ---------------------------------------------------------------- dir

func dirOps() *specialOps {
	return &specialOps{set: setDir, rewrite: rewriteDir}
}

// setDir mirrors setConfigDirOption() without calling chdir(): the process
// working directory is shared by every server of the process, so the
// directory is validated like chdir() would and stored as an absolute,
// symlink-free path (what getcwd() would then return). Relative paths are
// resolved against the current value of dir, like successive chdir() calls.
func setDir(c *Config, d *directive, args []string, _ setCtx) (*value, string) {
	if len(args) != 1 {
		return nil, "wrong number of arguments"
	}
	p := args[0]
	if p == "" {
		return nil, "No such file or directory"
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(d.load().str, p)
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, strerror(err)
	}
	if !fi.IsDir() {
		return nil, "Not a directory"
	}
	if err := syscall.Access(p, 1 /* X_OK */); err != nil {
		return nil, strerror(err)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return &value{str: filepath.Clean(p)}, ""
}

// ---------------------------------------------------------------- save

func saveOps() *specialOps {
	return &specialOps{set: setSave, rewrite: rewriteSave, strings: func(v *value) []string {
		params := v.data.([]SaveParam)
		out := make([]string, 0, 2*len(params))
		for _, p := range params {
			out = append(out, strconv.FormatInt(p.Seconds, 10), strconv.FormatInt(p.Changes, 10))
		}
		return out
	}}
}

func saveValue(params []SaveParam) *value {
	parts := make([]string, 0, len(params))
	for _, p := range params {
		parts = append(parts, strconv.FormatInt(p.Seconds, 10)+" "+strconv.FormatInt(p.Changes, 10))
	}
	return &value{str: strings.Join(parts, " "), data: params}
}

func defaultSave() *value {
	return saveValue([]SaveParam{{3600, 1}, {300, 100}, {60, 10000}})
}

// setSave mirrors setConfigSaveOption(), including the way several "save"
// lines of a configuration file accumulate (the first one read replaces
// the defaults, the next ones append).
func setSave(_ *Config, d *directive, args []string, ctx setCtx) (*value, string) {
	explicitReset := false
	if len(args) == 1 && args[0] == "" {
		explicitReset = true
		args = nil
	}
	if len(args)%2 != 0 {
		return nil, "Invalid save parameters"
	}
	for j, a := range args {
		v, ok := strtollFull(a)
		if !ok || (j%2 == 0 && v < 1) || (j%2 == 1 && v < 0) {
			return nil, "Invalid save parameters"
		}
	}
	var params []SaveParam
	if ld := ctx.ld; ld != nil && ld.readingFile {
		if !ld.saveLoaded {
			ld.saveLoaded = true
		} else if !explicitReset {
			params = append(params, d.load().data.([]SaveParam)...)
		}
	}
	for j := 0; j < len(args); j += 2 {
		secs, _ := strtollFull(args[j])
		changes, _ := strtollFull(args[j+1])
		params = append(params, SaveParam{Seconds: secs, Changes: int64(int32(changes))})
	}
	if params == nil {
		params = []SaveParam{}
	}
	return saveValue(params), ""
}

// ---------------------------------------------------------------- client-output-buffer-limit

func coblOps() *specialOps {
	return &specialOps{set: setCOBL, rewrite: rewriteCOBL}
}

func defaultCOBLLimits() [3]ClientBufferLimit {
	return [3]ClientBufferLimit{
		{0, 0, 0},
		{256 * 1024 * 1024, 64 * 1024 * 1024, 60},
		{32 * 1024 * 1024, 8 * 1024 * 1024, 60},
	}
}

func clientClassName(i int) string {
	switch i {
	case ClientNormal:
		return "normal"
	case ClientReplica:
		return "slave"
	default:
		return "pubsub"
	}
}

func coblValue(l [3]ClientBufferLimit) *value {
	parts := make([]string, 0, 3)
	for i, x := range l {
		parts = append(parts, clientClassName(i)+" "+strconv.FormatUint(x.HardBytes, 10)+" "+
			strconv.FormatUint(x.SoftBytes, 10)+" "+strconv.FormatInt(x.SoftSeconds, 10))
	}
	return &value{str: strings.Join(parts, " "), data: l}
}

func defaultCOBL() *value { return coblValue(defaultCOBLLimits()) }

func clientClassByName(s string) int {
	switch strings.ToLower(s) {
	case "normal":
		return ClientNormal
	case "slave", "replica":
		return ClientReplica
	case "pubsub":
		return ClientPubSub
	case "master":
		return -2
	}
	return -1
}

// setCOBL mirrors updateClientOutputBufferLimit(): all or nothing.
func setCOBL(_ *Config, d *directive, args []string, _ setCtx) (*value, string) {
	if len(args)%4 != 0 {
		return nil, "Wrong number of arguments in buffer limit configuration."
	}
	limits := d.load().data.([3]ClientBufferLimit)
	for j := 0; j < len(args); j += 4 {
		class := clientClassByName(args[j])
		if class < 0 {
			return nil, "Invalid client class specified in buffer limit configuration."
		}
		hard, okh := memtoull(args[j+1])
		soft, oks := memtoull(args[j+2])
		secs64, end, _ := cStrtoll(args[j+3], 10)
		secs := int32(secs64) // Redis stores it in an int
		if !okh || !oks || secs < 0 || end != len(args[j+3]) {
			return nil, "Error in hard, soft or soft_seconds setting in buffer limit configuration."
		}
		limits[class] = ClientBufferLimit{HardBytes: hard, SoftBytes: soft, SoftSeconds: int64(secs)}
	}
	return coblValue(limits), ""
}

// ---------------------------------------------------------------- oom-score-adj-values

func oomValuesOps() *specialOps {
	return &specialOps{set: setOOMValues, rewrite: rewriteOOMValues}
}

func oomValue(v [3]int) *value {
	return &value{str: strconv.Itoa(v[0]) + " " + strconv.Itoa(v[1]) + " " + strconv.Itoa(v[2]), data: v}
}

func defaultOOMValues() *value { return oomValue([3]int{0, 200, 800}) }

func setOOMValues(_ *Config, _ *directive, args []string, _ setCtx) (*value, string) {
	if len(args) != 3 {
		return nil, "wrong number of arguments"
	}
	var v [3]int
	for i, a := range args {
		n, ok := strtollFull(a)
		if !ok || n < -2000 || n > 2000 {
			return nil, "Invalid oom-score-adj-values, elements must be between -2000 and 2000."
		}
		v[i] = int(n)
	}
	return oomValue(v), ""
}

// ---------------------------------------------------------------- notify-keyspace-events

func notifyOps() *specialOps {
	return &specialOps{set: setNotify, rewrite: rewriteNotify}
}

func keyspaceEventsStringToFlags(s string) int64 {
	var flags int64
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			flags |= NotifyAll
		case 'g':
			flags |= NotifyGeneric
		case '$':
			flags |= NotifyString
		case 'l':
			flags |= NotifyList
		case 's':
			flags |= NotifySet
		case 'h':
			flags |= NotifyHash
		case 'z':
			flags |= NotifyZset
		case 'x':
			flags |= NotifyExpired
		case 'e':
			flags |= NotifyEvicted
		case 'K':
			flags |= NotifyKeyspace
		case 'E':
			flags |= NotifyKeyevent
		case 't':
			flags |= NotifyStream
		case 'm':
			flags |= NotifyKeyMiss
		case 'd':
			flags |= NotifyModule
		case 'n':
			flags |= NotifyNew
		default:
			return -1
		}
	}
	return flags
}

func keyspaceEventsFlagsToString(flags int64) string {
	var b strings.Builder
	if flags&NotifyAll == NotifyAll {
		b.WriteByte('A')
	} else {
		for _, x := range []struct {
			f int64
			c byte
		}{{NotifyGeneric, 'g'}, {NotifyString, '$'}, {NotifyList, 'l'}, {NotifySet, 's'},
			{NotifyHash, 'h'}, {NotifyZset, 'z'}, {NotifyExpired, 'x'}, {NotifyEvicted, 'e'},
			{NotifyStream, 't'}, {NotifyModule, 'd'}, {NotifyNew, 'n'}} {
			if flags&x.f != 0 {
				b.WriteByte(x.c)
			}
		}
	}
	if flags&NotifyKeyspace != 0 {
		b.WriteByte('K')
	}
	if flags&NotifyKeyevent != 0 {
		b.WriteByte('E')
	}
	if flags&NotifyKeyMiss != 0 {
		b.WriteByte('m')
	}
	return b.String()
}

func setNotify(_ *Config, _ *directive, args []string, _ setCtx) (*value, string) {
	if len(args) != 1 {
		return nil, "wrong number of arguments"
	}
	flags := keyspaceEventsStringToFlags(args[0])
	if flags == -1 {
		return nil, "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."
	}
	return &value{num: flags, str: keyspaceEventsFlagsToString(flags)}, ""
}

// ---------------------------------------------------------------- bind

func bindOps() *specialOps {
	return &specialOps{set: setBind, rewrite: rewriteBind, strings: func(v *value) []string {
		return append([]string{}, v.data.([]string)...)
	}}
}

func bindValue(addrs []string) *value {
	return &value{str: strings.Join(addrs, " "), data: addrs}
}

func defaultBind() *value { return bindValue([]string{"*", "-::*"}) }

func setBind(_ *Config, _ *directive, args []string, _ setCtx) (*value, string) {
	if len(args) > bindAddrMax {
		return nil, "Too many bind addresses specified."
	}
	if len(args) == 1 && args[0] == "" {
		args = nil
	}
	return bindValue(append([]string{}, args...)), ""
}

// ---------------------------------------------------------------- replicaof

func replicaOfOps() *specialOps {
	return &specialOps{set: setReplicaOf, rewrite: rewriteReplicaOf}
}

func setReplicaOf(_ *Config, _ *directive, args []string, _ setCtx) (*value, string) {
	if len(args) != 2 {
		return nil, "wrong number of arguments"
	}
	if strings.EqualFold(args[0], "no") && strings.EqualFold(args[1], "one") {
		return &value{data: replicaOf{}}, ""
	}
	p64, end, _ := cStrtoll(args[1], 10)
	port := int32(p64) // Redis stores it in an int
	if port < 0 || port > 65535 || end != len(args[1]) {
		return nil, "Invalid master port"
	}
	r := replicaOf{host: args[0], port: int(port), set: true}
	return &value{str: r.host + " " + strconv.Itoa(r.port), data: r}, ""
}

// ---------------------------------------------------------------- latency-tracking-info-percentiles

func percentilesOps() *specialOps {
	return &specialOps{set: setPercentiles, rewrite: rewritePercentiles}
}

func percentilesValue(p []float64) *value {
	parts := make([]string, len(p))
	for i, f := range p {
		parts[i] = FormatPercentile(f)
	}
	return &value{str: strings.Join(parts, " "), data: p}
}

func defaultPercentiles() *value { return percentilesValue([]float64{50, 99, 99.9}) }

func setPercentiles(_ *Config, _ *directive, args []string, _ setCtx) (*value, string) {
	if len(args) == 1 && args[0] == "" {
		args = nil
	}
	p := make([]float64, 0, len(args))
	for _, a := range args {
		f, ok := string2d(a)
		if !ok {
			return nil, "Invalid latency-tracking-info-percentiles parameters"
		}
		if f > 100.0 || f < 0.0 {
			return nil, "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
		}
		p = append(p, f)
	}
	return percentilesValue(p), ""
}
