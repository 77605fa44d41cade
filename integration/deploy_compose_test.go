package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestComposeHostNetwork builds the image (make image) once and runs
// deploy/docker-compose.host.yml under Docker with each compose command this
// machine has, `docker compose` (v2) and `docker-compose` (v1), as the README
// tells users either works. Each run gets free ports (other clusters may use
// 7000-7005 on this machine) and its own project name. It is skipped, with
// the reason, when no Docker engine can run here; as root it starts dockerd
// itself when none answers. SHOAL_REQUIRE_COMPOSE="v1,v2" (set by .ci/run,
// which installs both) fails the test when a named command is missing
// instead of running only the other.
func TestComposeHostNetwork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Docker image and starts containers")
	}
	docker := dockerEngine(t)
	commands := composeCommands(t, docker)
	root, err := ModuleRoot()
	require.NoError(t, err)

	image := "shoal-server:itest-" + strconv.Itoa(os.Getpid())
	out, code := RunTool(t, 5*time.Minute, "make", "-C", root, "image", "IMAGE="+image)
	require.Equal(t, 0, code, out)
	t.Cleanup(func() { _, _ = RunTool(t, time.Minute, docker, "rmi", "-f", image) })
	t.Logf("make image: %s", lastLines(out, 2))

	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) { composeClusterRun(t, root, image, c) })
	}
}

// composeClusterRun starts the host-network compose cluster with one compose
// command, checks that it accepts writes as soon as its ready probe returns,
// and restarts one master's container without losing acknowledged writes.
func composeClusterRun(t *testing.T, root, image string, compose composeCommand) {
	cli := redisCLIPath(t)
	var err error
	// The host compose file with free ports and this run's image.
	names, cmds := hostComposeCommands(t)
	ports := map[int]int{}
	taken := map[int]bool{}
	for _, name := range names {
		for _, d := range []string{"port", "cluster-port", "metrics-port"} {
			p, _ := strconv.Atoi(directive(cmds[name], d))
			for {
				var np int
				if d == "cluster-port" {
					np, err = testharness.FreeBusPort()
				} else {
					np, err = testharness.FreePort()
				}
				require.NoError(t, err)
				if !taken[np] {
					taken[np], ports[p] = true, np
					break
				}
			}
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy", "docker-compose.host.yml"))
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(data, &doc))
	services := doc["services"].(map[string]any)
	var addrs []string
	for _, name := range names {
		svc := services[name].(map[string]any)
		cmd := cmds[name]
		newCmd := remappedKeepAll(t, cmd, ports)
		svc["command"] = newCmd
		svc["image"] = image
		delete(svc, "container_name") // one project per run
		p, _ := strconv.Atoi(directive(newCmd, "port"))
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(p))
	}
	// The healthchecks and the ready probe wait for this run's addresses.
	joined := strings.Join(addrs, ",")
	for _, name := range names {
		hc := services[name].(map[string]any)["healthcheck"].(map[string]any)
		test := hc["test"].([]any)
		test[3] = joined
	}
	ready := services["ready"].(map[string]any)
	ready["image"] = image
	ready["command"] = []string{"--wait-cluster", joined, "120"}
	delete(doc, "x-shoal")
	gen, err := yaml.Marshal(doc)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "docker-compose.host.yml")
	require.NoError(t, os.WriteFile(file, gen, 0o644))
	project := "shoalitest" + strconv.Itoa(os.Getpid()) + compose.version
	run := func(timeout time.Duration, args ...string) (string, int) {
		return RunTool(t, timeout, compose.argv[0], append(append(slices.Clone(compose.argv[1:]), "-f", file, "-p", project), args...)...)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := run(time.Minute, "logs", "--tail", "30")
			t.Logf("compose logs:\n%s", logs)
		}
		out, _ := run(2*time.Minute, "down", "-v", "--timeout", "5")
		t.Logf("compose down: %s", lastLines(out, 3))
	})

	writesAccepted := func(when string) {
		t.Helper()
		for i := range 50 {
			got, code := RunTool(t, 10*time.Second, cli, "-c", "-p", addrs[0][strings.LastIndexByte(addrs[0], ':')+1:],
				"SET", "after-"+when+"-"+strconv.Itoa(i), "v")
			require.Equal(t, 0, code, got)
			require.Equal(t, "OK", strings.TrimSpace(got), "write %d right after %s", i, when)
		}
	}
	start := time.Now()
	if compose.version == "v2" {
		// v2's `up -d --wait` returns once every container's healthcheck
		// (the same --wait-cluster check as the ready probe) passes.
		out, code := run(3*time.Minute, "up", "-d", "--wait")
		require.Equal(t, 0, code, out)
		t.Logf("up -d --wait: %v", time.Since(start).Round(time.Millisecond))
		writesAccepted("up-wait")
	} else {
		out, code := run(3*time.Minute, "up", "-d")
		require.Equal(t, 0, code, out)
	}
	// The ready probe returns when the cluster accepts writes: from then
	// on, no write is refused (right after `up -d` they got CLUSTERDOWN).
	out, code := run(3*time.Minute, "run", "--rm", "ready")
	require.Equal(t, 0, code, out)
	t.Logf("up -d to ready: %v (%s)", time.Since(start).Round(time.Millisecond), lastLines(out, 1))
	writesAccepted("ready")
	nodes := make([]*ClusterNode, len(addrs))
	for i, a := range addrs {
		p, _ := strconv.Atoi(a[strings.LastIndexByte(a, ':')+1:])
		nodes[i] = &ClusterNode{Server: &Server{Addr: a, Port: p}}
	}
	WaitFor(t, formTimeout, "the compose cluster to form itself", func() string { return formedAsPlanned(nodes) })
	WaitFor(t, formTimeout, "redis-cli --cluster check", func() string {
		out, code := RunTool(t, 10*time.Second, cli, "--cluster", "check", addrs[0])
		if code != 0 {
			return out
		}
		return ""
	})
	t.Logf("%s up -d to a checked 3+3 cluster: %v", compose.name, time.Since(start).Round(time.Millisecond))
	goRedisClusterKeys(t, addrs[0])

	// `compose restart` of one master's container: on SIGTERM it
	// hands its slots to its replica (--cluster-failover-on-shutdown), so the
	// restart loses nothing and it comes back as a replica. Where this build
	// cannot fail over, it restarts as a master with its slots from
	// nodes.conf in its volume and the keys its SIGTERM saved to dump.rdb.
	var victim string
	var before NodeLine
	for i, a := range addrs {
		me, err := Myself(a)
		require.NoError(t, err)
		if me.HasFlag("master") {
			victim, before = names[i], me
			break
		}
	}
	victimAddr := addrs[slices.Index(names, victim)]
	waitVoteGrace(t, cmds[names[0]], start)
	restartStart := time.Now()
	out, code = run(2*time.Minute, "restart", victim)
	require.Equal(t, 0, code, out)
	t.Logf("%s restart %s: %v", compose.name, victim, time.Since(restartStart).Round(time.Millisecond))
	logs, _ := run(time.Minute, "logs", "--no-color", victim)
	handedOver := strings.Contains(logs, "took over the slots")
	if i := strings.LastIndex(logs, "cluster-failover-on-shutdown: "); i >= 0 {
		t.Logf("%s", strings.SplitN(logs[i:], "\n", 2)[0])
	}
	WaitFor(t, 30*time.Second, "the cluster to recover after restarting "+victim, func() string {
		if why := clusterSettled(nodes, 3); why != "" {
			return why
		}
		me, err := Myself(victimAddr)
		if err != nil {
			return err.Error()
		}
		if me.ID != before.ID {
			return "the restarted node has a new id " + me.ID
		}
		if !handedOver && !slices.Equal(me.Slots, before.Slots) {
			return fmt.Sprintf("the restarted master serves %v, not %v", me.Slots, before.Slots)
		}
		if handedOver && !me.HasFlag("slave") {
			return "the restarted node is not a replica of the new master: " + me.Flags
		}
		return ""
	})
	out, code = RunTool(t, 30*time.Second, cli, "--cluster", "check", addrs[0])
	require.Equal(t, 0, code, out)
	// Every key the cluster acknowledged before the restart, read back.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 5})
	defer cc.Close()
	lost := 0
	for lo := 0; lo < 10000; lo += 1000 {
		cmds, _ := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < lo+1000; i++ {
				p.Get(ctx, "gr:"+strconv.Itoa(i))
			}
			return nil
		})
		for _, c := range cmds {
			if c.Err() != nil {
				lost++
			}
		}
	}
	t.Logf("after restarting master %s (%s): %d of 10000 acknowledged keys unreadable", victim, before.ID[:8], lost)
	if handedOver {
		require.Zero(t, lost, "acknowledged writes lost across a master restart after the handover")
	} else {
		t.Logf("the handover did not happen (see the line above): the restarted master serves the keys its final save kept")
	}
}

// remappedKeepAll is the compose command with its ports (also inside
// --cluster-seeds) replaced; unlike remapped it keeps --port, --bind and
// --dir, because the container runs it as is.
func remappedKeepAll(t *testing.T, cmd []string, ports map[int]int) []string {
	t.Helper()
	out := slices.Clone(cmd)
	for i := 0; i+1 < len(out); i++ {
		switch out[i] {
		case "--port", "--cluster-port", "--metrics-port":
			p, err := strconv.Atoi(out[i+1])
			require.NoError(t, err)
			out[i+1] = strconv.Itoa(ports[p])
		case "--cluster-seeds":
			var seeds []string
			for _, s := range strings.Split(out[i+1], ",") {
				host, rest, _ := strings.Cut(s, ":")
				portStr, busStr, _ := strings.Cut(rest, "@")
				p, _ := strconv.Atoi(portStr)
				b, _ := strconv.Atoi(busStr)
				seeds = append(seeds, fmt.Sprintf("%s:%d@%d", host, ports[p], ports[b]))
			}
			out[i+1] = strings.Join(seeds, ",")
		}
	}
	return out
}

// dockerEngine returns the docker client's path once an engine answers,
// starting dockerd (as root, when installed) if none does; it skips the
// test with the reason otherwise.
func dockerEngine(t *testing.T) string {
	t.Helper()
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("no docker client on this machine (apt-get install docker.io)")
	}
	if _, code := RunTool(t, 20*time.Second, docker, "info"); code == 0 {
		return docker
	}
	dockerd, err := exec.LookPath("dockerd")
	if err != nil || os.Geteuid() != 0 {
		t.Skipf("no Docker engine answers and dockerd cannot be started here (dockerd: %v, uid %d)", err, os.Geteuid())
	}
	logPath := filepath.Join(t.TempDir(), "dockerd.log")
	logf, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(dockerd)
	cmd.Stdout, cmd.Stderr = logf, logf
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		t.Skipf("starting dockerd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logf.Close()
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if _, code := RunTool(t, 5*time.Second, docker, "info"); code == 0 {
			return docker
		}
		time.Sleep(500 * time.Millisecond)
	}
	log, _ := os.ReadFile(logPath)
	t.Skipf("dockerd started but no engine answered within 30 s; its log ends:\n%s", lastLines(string(log), 10))
	return ""
}

// composeCommand is one way of running compose: its name (also the
// subtest's), its version and its argv.
type composeCommand struct {
	name    string
	version string // "v1" or "v2", as SHOAL_REQUIRE_COMPOSE names it
	argv    []string
}

// composeCommands lists the compose commands this machine has: `docker
// compose` (the v2 plugin) and `docker-compose` (v1, Debian 12's package). A
// command named in SHOAL_REQUIRE_COMPOSE ("v1", "v2" or both, comma
// separated) must be there; with neither, the test skips.
func composeCommands(t *testing.T, docker string) []composeCommand {
	t.Helper()
	var found []composeCommand
	have := map[string]bool{}
	if out, code := RunTool(t, 20*time.Second, docker, "compose", "version"); code == 0 {
		found = append(found, composeCommand{"docker compose", "v2", []string{docker, "compose"}})
		have["v2"] = true
		t.Logf("docker compose: %s", lastLines(out, 1))
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		out, _ := RunTool(t, 20*time.Second, p, "version", "--short")
		found = append(found, composeCommand{"docker-compose", "v1", []string{p}})
		have["v1"] = true
		t.Logf("docker-compose: %s", lastLines(out, 1))
	}
	for _, want := range strings.Split(os.Getenv("SHOAL_REQUIRE_COMPOSE"), ",") {
		if want = strings.TrimSpace(want); want != "" && !have[want] {
			t.Fatalf("SHOAL_REQUIRE_COMPOSE names compose %s, which this machine does not have "+
				"(v2: scripts/install-compose-plugin.sh; v1: apt-get install docker-compose)", want)
		}
	}
	if len(found) == 0 {
		t.Skip("neither `docker compose` nor docker-compose is installed (apt-get install docker-compose)")
	}
	return found
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
