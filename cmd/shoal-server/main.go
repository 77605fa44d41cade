// Command shoal-server runs one shoal node. It is configured exactly like
// redis-server: shoal-server [/path/to/shoal.conf] [--directive value ...].
package main

import (
	"errors"
	"fmt"
	"github.com/shoal-db/shoal/acl"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/gossip"
	"github.com/shoal-db/shoal/internal/buildinfo"
	"github.com/shoal-db/shoal/node"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// daemonChildEnv marks the re-executed child of a daemonizing parent: Go
// cannot fork, so `daemonize yes` starts a detached copy of the process.
const daemonChildEnv = "SHOAL_DAEMON_CHILD"

func init() {
	// Heap profile sampling is off: nothing in the server reads Go heap
	// profiles, and its stack buckets held ~90 KB of an idle node's
	// memory. GODEBUG=memprofilerate=N still sets a rate for debugging.
	// The Makefile's build turns it off before the first allocation
	// (runtime.godebugDefault); this covers a plain `go build`, from here.
	if !strings.Contains(os.Getenv("GODEBUG"), "memprofilerate=") {
		runtime.MemProfileRate = 0
	}
}

func main() {
	bootWithOneCore(os.Args[1:]) // cmd/shoal-server/bootcores.go
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--prestop" { // cmd/shoal-server/prestop.go
		return prestop(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "--wait-cluster" { // cmd/shoal-server/waitcluster.go
		return waitCluster(args[1:], stdout, stderr)
	}
	// As redis-server: the first argument alone decides (main() in server.c);
	// the version on stdout and exit 0, the usage on stderr and exit 1.
	if len(args) > 0 {
		switch args[0] {
		case "-v", "--version":
			build := buildinfo.Get()
			fmt.Fprintf(stdout, "shoal-server v=%s redis_version=%s sha=%s:%d malloc=go bits=%d build=%s go=%s\n",
				buildinfo.Version, node.Version, build.GitSHA1, build.DirtyFlag(), strconv.IntSize, build.BuildID, runtime.Version())
			return 0
		case "-h", "--help":
			fmt.Fprint(stderr, usage)
			return 1
		}
	}
	// rename-command lines are checked against the command table, and
	// "user" lines while the file is read (duplicates, malformed rules;
	// package acl knows the rules), as Redis does.
	commands := node.CommandNames()
	cfg, err := config.LoadWith(args, config.LoadOptions{
		CommandExists: func(name string) bool { return commands[name] },
		ValidateUser:  acl.ConfigUserValidator(),
	})
	if err != nil {
		fmt.Fprintln(stderr, err.Error())
		return 1
	}
	if cfg.Bool("daemonize") && os.Getenv(daemonChildEnv) == "" {
		return daemonize(stderr)
	}
	if dir := cfg.String("dir"); dir != "" {
		if err := os.Chdir(dir); err != nil {
			fmt.Fprintf(stderr, "Can't chdir to '%s': %v\n", dir, err)
			return 1
		}
	}
	log, closeLog, err := newLogger(cfg, stdout)
	if err != nil {
		fmt.Fprintf(stderr, "Can't open the log file: %v\n", err)
		return 1
	}
	defer closeLog()

	pid := os.Getpid()
	log.Info("oO0OoO0OoO0Oo shoal is starting oO0OoO0OoO0Oo")
	build := buildinfo.Get()
	log.Info(fmt.Sprintf("shoal version=%s (Redis %s compatible), bits=%d, commit=%s, modified=%d, pid=%d, just started",
		buildinfo.Version, node.Version, strconv.IntSize, build.GitSHA1, build.DirtyFlag(), pid))
	if path := cfg.ConfigFile(); path != "" {
		log.Info("Configuration loaded", zap.String("file", path))
	} else {
		log.Warn("Warning: no config file specified, using the default config. In order to specify a config file use shoal-server /path/to/shoal.conf (a commented sample: deploy/shoal.conf)")
	}

	disableTHP(cfg, log) // cmd/shoal-server/thp_linux.go

	// Redis's clusterInit port check: the bus takes port+10000 unless
	// cluster-port says otherwise.
	clientPort := cfg.Int("port")
	if cfg.Bool("tls-cluster") {
		clientPort = cfg.Int("tls-port") // the bus port follows the TLS port then
	}
	if cfg.Bool("cluster-enabled") && cfg.Int("cluster-port") == 0 && clientPort > 65535-10000 {
		log.Error("Redis port number too high. Cluster communication port is 10,000 port numbers higher than your Redis port. Your Redis port number must be 55535 or less.")
		return 1
	}

	stopped := make(chan struct{}, 1)
	// An explicit GOMAXPROCS also fixes the cores of background saves and
	// rewrites, as it wins in setParallelism.
	manageCores := os.Getenv("GOMAXPROCS") == ""
	srv, err := node.New(cfg, node.Options{Logger: log, LoadLater: true, ManageGoMemoryLimit: true, ManageParallelism: manageCores, OnShutdown: func() {
		select {
		case stopped <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		log.Error("Fatal: " + err.Error())
		return 1
	}
	// From here on every line carries the node's identity (node_id,
	// current_epoch: node/logidentity.go).
	log = srv.Logger()
	mode := "standalone"
	if cfg.Bool("cluster-enabled") {
		mode = "cluster"
	}
	setParallelism(cfg.Int("io-threads"), log)
	// The sockets are bound before the PID is logged and the data loaded,
	// as redis-server's initServer does: a client that connects meanwhile
	// waits instead of being refused.
	if err := srv.Bind(); err != nil {
		logListenError(log, cfg, err)
		return 1
	}
	// The " PID: <pid>" text is what Redis's test harness waits for; like
	// redis-server, the PID and "Server initialized" come before the data
	// set is loaded, so a harness sees a server that started and then
	// refused its RDB file.
	log.Info(fmt.Sprintf("Running mode=%s, Port: %d PID: %d", mode, cfg.Int("port"), pid))
	log.Info("Server initialized")
	// Clients are served during the load (node's serveEarly): a SHUTDOWN
	// then stops the process at once, without saving, as Redis's does.
	loaded := make(chan struct{})
	go func() {
		select {
		case <-stopped:
			log.Warn("shoal is now ready to exit, bye bye...")
			os.Exit(0)
		case <-loaded:
		}
	}()
	err = srv.LoadData()
	close(loaded)
	if err != nil {
		var inUse *gossip.ConfigInUseError
		switch {
		case errors.As(err, &inUse):
			log.Error(inUse.Error()) // Redis's clusterLockConfig text, then exit 1
		case !errors.Is(err, node.ErrDataNotLoaded):
			log.Error("Fatal: " + err.Error())
		}
		return 1
	}
	if err := srv.Listen(); err != nil {
		logListenError(log, cfg, err)
		return 1
	}
	pidfile := cfg.String("pidfile")
	if pidfile != "" || os.Getenv(daemonChildEnv) != "" {
		if pidfile == "" {
			pidfile = "/var/run/redis.pid"
		}
		if err := os.WriteFile(pidfile, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
			log.Warn("Failed to write PID file", zap.String("pidfile", pidfile), zap.Error(err))
		} else {
			defer os.Remove(pidfile)
		}
	}
	// SHOAL_CPUPROFILE=<file> profiles the whole run (make bench uses it to
	// show where server CPU goes).
	if path := os.Getenv("SHOAL_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if err := pprof.StartCPUProfile(f); err == nil {
				defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
			}
		}
	}
	log.Info("Ready to accept connections")

	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	if code, exit := waitForShutdown(srv, cfg, log, sigs, stopped); exit {
		return code
	}
	srv.Shutdown()
	log.Warn("shoal is now ready to exit, bye bye...")
	return 0
}

// waitForShutdown returns when the node should exit: a SHUTDOWN command
// or a signal's shutdown succeeded (stopped). A signal is handed to the
// node, whose cron runs the shutdown as shutdown-on-sigterm /
// shutdown-on-sigint say; if it fails (the final save) the server keeps
// running, as Redis does. A second SIGINT while one is pending or under
// way exits at once with status 1 ("You insist..."): exit is true when the
// caller must return code without the orderly Shutdown.
func waitForShutdown(srv *node.Server, cfg *config.Config, log *zap.Logger, sigs <-chan os.Signal, stopped <-chan struct{}) (code int, exit bool) {
	for {
		select {
		case sig := <-sigs:
			sigint := sig == syscall.SIGINT
			if sigint && srv.ShutdownPending() {
				log.Warn("You insist... exiting now.")
				srv.RemoveTempRDB() // the final save is abandoned
				return 1, true
			}
			name := "SIGTERM"
			if sigint {
				name = "SIGINT"
			}
			log.Warn(fmt.Sprintf("Received %s scheduling shutdown...", name))
			go func() {
				handOverOnShutdown(cfg, log) // cmd/shoal-server/prestop.go
				srv.SignalShutdown(sigint)
			}()
		case <-stopped:
			return 0, false
		}
	}
}

// daemonize starts a detached copy of this process and returns at once, as
// redis-server's parent does after fork.
func daemonize(stderr io.Writer) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "daemonize: %v\n", err)
		return 1
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintf(stderr, "daemonize: %v\n", err)
		return 1
	}
	defer devnull.Close()
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), daemonChildEnv+"=1")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "daemonize: %v\n", err)
		return 1
	}
	_ = cmd.Process.Release()
	return 0
}

// newLogger builds the zap logger: the logfile (appended to), or stdout when
// logfile is empty (/dev/null when daemonized, as Redis).
func newLogger(cfg *config.Config, stdout io.Writer) (*zap.Logger, func(), error) {
	var out zapcore.WriteSyncer = zapcore.AddSync(stdout)
	closeFn := func() {}
	if path := cfg.String("logfile"); path != "" {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, err
		}
		out = zapcore.Lock(f)
		closeFn = func() { _ = f.Close() }
	} else if os.Getenv(daemonChildEnv) != "" {
		out = zapcore.AddSync(io.Discard)
	} else if f, ok := stdout.(*os.File); ok {
		out = zapcore.Lock(f)
	}
	level := zapcore.InfoLevel
	switch cfg.String("loglevel") {
	case "debug", "verbose":
		level = zapcore.DebugLevel
	case "warning":
		level = zapcore.WarnLevel
	case "nothing":
		level = zapcore.FatalLevel + 1
	}
	encCfg := zapcore.EncoderConfig{
		TimeKey:        "t",
		LevelKey:       "l",
		MessageKey:     "msg",
		LineEnding:     zapcore.DefaultLineEnding,
		EncodeLevel:    zapcore.CapitalLevelEncoder,
		EncodeTime:     zapcore.TimeEncoderOfLayout("02 Jan 2006 15:04:05.000"),
		EncodeDuration: zapcore.StringDurationEncoder,
	}
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(encCfg), out, level)
	log := zap.New(core).With(zap.Int("pid", os.Getpid()))
	return log, func() { _ = log.Sync(); closeFn() }, nil
}

const usage = `Usage: ./shoal-server [/path/to/shoal.conf] [options] [-]
       ./shoal-server - (read config from stdin)
       ./shoal-server -v or --version
       ./shoal-server -h or --help
       ./shoal-server --wait-cluster host:port[,host:port...] [timeout-seconds]

shoal-server is configured like redis-server: every redis.conf directive can
be given in the file or on the command line as --directive value.

Examples:
       ./shoal-server (run the server with default config)
       ./shoal-server /etc/shoal/6379.conf
       ./shoal-server --port 7777
       ./shoal-server --port 7777 --cluster-enabled yes --cluster-config-file nodes.conf
       ./shoal-server /etc/myshoal.conf --loglevel verbose -
       ./shoal-server /etc/myshoal.conf --loglevel verbose

`

// setParallelism makes io-threads what it is for redis-server: how many
// cores the node serves clients with. Redis runs commands on one thread and
// its default io-threads is 1; shoal runs each connection on its own
// goroutine, and io-threads caps the goroutines running at once
// (GOMAXPROCS). One core by default is what a Redis user expects of a node
// (several nodes share a host in a test cluster, a co-located client keeps
// its core) and, on a 2-core host with the client beside it, answers -P 1
// traffic faster than two cores do: goroutines woken on both cores cost
// cross-core wake-ups and take the client's CPU (redis-benchmark -P 1:
// 110k rps on two cores vs 230-280k on one, Redis 240-280k). Raise
// io-threads to serve more clients in parallel on more cores. An explicit
// GOMAXPROCS in the environment wins.
func setParallelism(ioThreads int64, log *zap.Logger) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	n := int(max(1, min(ioThreads, int64(runtime.NumCPU()))))
	runtime.GOMAXPROCS(n)
	if n > 1 {
		log.Info(fmt.Sprintf("Serving clients on %d cores (io-threads)", n))
	}
}

// logListenError logs why Bind or Listen failed: Redis's line for a port
// that cannot be bound, else the error.
func logListenError(log *zap.Logger, cfg *config.Config, err error) {
	if errors.Is(err, node.ErrListen) {
		log.Error(fmt.Sprintf("Failed listening on port %d (TCP), aborting.", cfg.Int("port")))
		return
	}
	log.Error(err.Error())
}
