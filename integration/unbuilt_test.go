package integration

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-db/shoal/internal/testharness"
	"github.com/stretchr/testify/require"
)

// A directive value whose feature shoal has not built (config/unbuilt.go)
// stops start-up with Redis's config-error layout on stderr and exit 1.
func TestUnbuiltDirectiveRefusedAtStartup(t *testing.T) {
	bin := BuildServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--port", "0", "--watchdog-period", "6380")
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "shoal-server did not exit")
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode())
	require.Equal(t, "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\n"+
		"Reading the configuration file, at line 3\n"+
		">>> 'watchdog-period \"6380\"'\n"+
		"The software watchdog is not available in shoal\n\n", stderr.String())
	require.Empty(t, stdout.String())
}

// The check is on the final configuration: a file with watchdog-period 6390
// and "--watchdog-period 0" after it starts, and CONFIG SET of it is refused
// at run time.
func TestUnbuiltDirectiveLaterLineWins(t *testing.T) {
	bin := BuildServer(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "aof.conf")
	require.NoError(t, os.WriteFile(conf, []byte("watchdog-period 6390\nsave \"\"\n"), 0o644))
	port, err := testharness.FreePort()
	require.NoError(t, err)
	cmd := exec.Command(bin, conf, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", dir, "--watchdog-period", "0")
	cmd.Dir = dir
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), readyLine) {
		select {
		case err := <-exited:
			t.Fatalf("shoal-server exited (%v):\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "not ready after 10 s:\n%s", out.String())
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, t: t}
	got, err := RedisCLI(t, s, "CONFIG", "SET", "watchdog-period", "6390")
	require.NoError(t, err)
	require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'watchdog-period') - The software watchdog is not available in shoal", strings.TrimSpace(got))
	got, err = RedisCLI(t, s, "CONFIG", "GET", "watchdog-period")
	require.NoError(t, err)
	require.Equal(t, "watchdog-period\n0", strings.TrimSpace(got))
}

// lockedBuffer is an io.Writer the child's output goroutines and the test
// can share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
