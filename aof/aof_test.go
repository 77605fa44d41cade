package aof

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestManifestRoundTrip(t *testing.T) {
	m := &Manifest{}
	assert.Equal(t, "appendonly.aof.1.base.rdb", m.NewBase("appendonly.aof", true))
	assert.Equal(t, "appendonly.aof.1.incr.aof", m.NewIncr("appendonly.aof"))
	assert.Equal(t, "appendonly.aof.2.incr.aof", m.NewIncr("appendonly.aof"))
	m.MarkIncrHistory(true)
	assert.Equal(t, "appendonly.aof.2.base.aof", m.NewBase("appendonly.aof", false))
	want := "file appendonly.aof.2.base.aof seq 2 type b\n" +
		"file appendonly.aof.1.base.rdb seq 1 type h\n" +
		"file appendonly.aof.1.incr.aof seq 1 type h\n" +
		"file appendonly.aof.2.incr.aof seq 2 type i\n"
	assert.Equal(t, want, m.String())
	back, err := ParseManifest([]byte(want))
	require.NoError(t, err)
	assert.Equal(t, m, back)

	// A name that needs quoting is written as sdscatrepr does and read back.
	q := &Manifest{}
	q.NewBase("my file.aof", true)
	assert.Equal(t, "file \"my file.aof.1.base.rdb\" seq 1 type b\n", q.String())
	back, err = ParseManifest([]byte(q.String()))
	require.NoError(t, err)
	assert.Equal(t, "my file.aof.1.base.rdb", back.Base.Name)
}

func TestManifestErrors(t *testing.T) {
	for _, tc := range []struct{ text, msg string }{
		{"", "Found an empty AOF manifest"},
		{"file a seq 1 type b", "The AOF manifest file contains too long line"}, // no newline: fgets saw no end
		{"\n", "Invalid AOF manifest file format"},
		{"file a seq 1\n", "Invalid AOF manifest file format"},
		{"file a seq 1 type b x\n", "Invalid AOF manifest file format"},
		{"file a seq 0 type b\n", "Invalid AOF manifest file format"},
		{"file ../a seq 1 type b\n", "File can't be a path, just a filename"},
		{"file a seq 1 type b\nfile b seq 2 type b\n", "Found duplicate base file information"},
		{"file a seq 2 type i\nfile b seq 2 type i\n", "Found a non-monotonic sequence number"},
		{"file a seq 1 type x\n", "Unknown AOF file type"},
		{"file " + strings.Repeat("a", 1100) + " seq 1 type b\n", "The AOF manifest file contains too long line"},
	} {
		_, err := ParseManifest([]byte(tc.text))
		var me *ManifestError
		require.ErrorAs(t, err, &me, tc.text)
		assert.Equal(t, tc.msg, me.Message, tc.text)
	}
	// Comments are skipped, unknown keys ignored (forward compatibility).
	m, err := ParseManifest([]byte("# hello\nfile a seq 1 type b extra 7\n"))
	require.NoError(t, err)
	assert.Equal(t, "a", m.Base.Name)
}

func TestWriteManifestReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	m := &Manifest{}
	m.NewBase("x.aof", true)
	m.NewIncr("x.aof")
	require.NoError(t, WriteManifest(dir, "x.aof", m))
	got, err := ReadManifest(dir, "x.aof")
	require.NoError(t, err)
	assert.Equal(t, m, got)
	_, err = os.Stat(filepath.Join(dir, "temp-x.aof.manifest"))
	assert.True(t, os.IsNotExist(err), "the temporary file is renamed")
	_, err = ReadManifest(filepath.Join(dir, "none"), "x.aof")
	assert.ErrorIs(t, err, ErrNoManifest)
}

func TestReadCommands(t *testing.T) {
	data := []byte("#TS:1700000000\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
	var got []string
	end, err := ReadCommands(data, 0, func(args [][]byte, end int) error {
		parts := make([]string, len(args))
		for i, a := range args {
			parts[i] = string(a)
		}
		got = append(got, strings.Join(parts, " "))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"SELECT 0", "SET k v"}, got)
	assert.Equal(t, len(data), end)

	// Every cut inside the last command is a truncation at the end of the
	// one before; the whole file reads.
	first := len("#TS:1700000000\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n")
	for cut := first + 1; cut < len(data); cut++ {
		valid, err := ReadCommands(data[:cut], 0, func([][]byte, int) error { return nil })
		assert.ErrorIs(t, err, ErrTruncated, "cut at %d", cut)
		assert.Equal(t, first, valid, "cut at %d", cut)
	}
	for _, bad := range []string{"SET k v\r\n", "*0\r\n", "*1\r\nx\r\n", "*1\r\n$-1\r\n"} {
		_, err := ReadCommands([]byte(bad), 0, func([][]byte, int) error { return nil })
		assert.ErrorIs(t, err, ErrFormat, bad)
	}
	// A huge argument count or length in a short file is a truncation,
	// found without allocating for it.
	_, err = ReadCommands([]byte("*2000000000\r\n$3\r\nSET\r\n"), 0, func([][]byte, int) error { return nil })
	assert.ErrorIs(t, err, ErrTruncated)
	_, err = ReadCommands([]byte("*1\r\n$9000000000\r\nabc"), 0, func([][]byte, int) error { return nil })
	assert.ErrorIs(t, err, ErrTruncated)
}

func TestAppenderOffsetsAndSwitch(t *testing.T) {
	dir := t.TempDir()
	f1, err := os.Create(filepath.Join(dir, "1"))
	require.NoError(t, err)
	a := NewAppender(f1, 0)
	a.Propagate(0, [][][]byte{{[]byte("SET"), []byte("k"), []byte("v")}})
	a.Propagate(0, [][][]byte{{[]byte("DEL"), []byte("k")}})
	a.Propagate(2, [][][]byte{{[]byte("DEL"), []byte("x")}})
	off := a.Appended()
	assert.Equal(t, off, a.Buffered())
	require.NoError(t, a.WaitWritten(off))
	assert.Equal(t, off, a.Written())
	assert.Less(t, a.Synced(), off)
	require.NoError(t, a.WaitSynced(off))
	assert.Equal(t, off, a.Synced())
	f2, err := os.Create(filepath.Join(dir, "2"))
	require.NoError(t, err)
	a.Propagate(2, [][][]byte{{[]byte("DEL"), []byte("y")}})
	require.NoError(t, a.Switch(f2, 0, true))
	a.Propagate(2, [][][]byte{{[]byte("DEL"), []byte("z")}})
	require.NoError(t, a.Close())
	b1, _ := os.ReadFile(filepath.Join(dir, "1"))
	b2, _ := os.ReadFile(filepath.Join(dir, "2"))
	assert.Equal(t, "*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n"+
		"*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*2\r\n$3\r\nDEL\r\n$1\r\nx\r\n*2\r\n$3\r\nDEL\r\n$1\r\ny\r\n", string(b1))
	assert.Equal(t, "*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*2\r\n$3\r\nDEL\r\n$1\r\nz\r\n", string(b2),
		"the new file starts with a SELECT")
}

// Writers propagate and wait (always and everysec style) while the file is
// switched under them: every command lands exactly once, in one of the
// files, and each writer's commands keep their order.
func TestAppenderConcurrentWaitAndSwitch(t *testing.T) {
	dir := t.TempDir()
	open := func(i int) *os.File {
		f, err := os.Create(filepath.Join(dir, strconv.Itoa(i)))
		require.NoError(t, err)
		return f
	}
	a := NewAppender(open(0), 0)
	const writers, perWriter, switches = 4, 300, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				a.Propagate(w%2, [][][]byte{{[]byte("RPUSH"), []byte("l" + strconv.Itoa(w)), []byte(strconv.Itoa(i))}})
				off := a.Appended()
				if w%2 == 0 {
					assert.NoError(t, a.WaitSynced(off))
					assert.GreaterOrEqual(t, a.Synced(), off)
				} else {
					assert.NoError(t, a.WaitWritten(off))
					assert.GreaterOrEqual(t, a.Written(), off)
				}
			}
		}()
	}
	for i := 1; i <= switches; i++ {
		require.NoError(t, a.Switch(open(i), 0, i%2 == 0))
	}
	wg.Wait()
	require.NoError(t, a.Close())
	next := make([]int, writers)
	for i := 0; i <= switches; i++ {
		data, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)))
		require.NoError(t, err)
		db := -1 // each file selects its database before its first command
		_, err = ReadCommands(data, 0, func(args [][]byte, _ int) error {
			if string(args[0]) == "SELECT" {
				db, _ = strconv.Atoi(string(args[1]))
				return nil
			}
			w, _ := strconv.Atoi(string(args[1][1:]))
			assert.Equal(t, w%2, db, "file %d: writer %d's command in the wrong database", i, w)
			assert.Equal(t, strconv.Itoa(next[w]), string(args[2]), "writer %d", w)
			next[w]++
			return nil
		})
		require.NoError(t, err)
	}
	for w := range writers {
		assert.Equal(t, perWriter, next[w], "writer %d", w)
	}
}

// TestGroupRoundWaitsForTheLastRoundsMembers: a round with fewer members
// than the last one waits for the missing one to join, so one round's work
// covers both; a round that nobody joins ends its wait at pollFor.
func TestGroupRoundWaitsForTheLastRoundsMembers(t *testing.T) {
	var appended, covered atomic.Int64
	var rounds atomic.Int32
	g := &group{progress: appended.Load, pollFor: time.Hour}
	work := func() error {
		rounds.Add(1)
		covered.Store(appended.Load())
		return nil
	}
	waitFor := func(off int64) error {
		return g.wait(func() bool { return covered.Load() >= off }, work)
	}
	g.lastMembers = 2 // the last round had two members

	appended.Add(1)
	leader := make(chan error, 1)
	go func() { leader <- waitFor(1) }()
	// The leader collects alone, then waits for a second member.
	require.Eventually(t, func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.running != nil && g.running.full != nil
	}, 10*time.Second, time.Millisecond)
	appended.Add(1)
	require.NoError(t, waitFor(2)) // joins, and the round covers it
	select {
	case err := <-leader:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the leader did not finish its round")
	}
	assert.Equal(t, int32(1), rounds.Load(), "one round covers both")
	assert.Equal(t, 2, g.lastMembers)

	// Nobody joins: the wait ends at pollFor, and the next lone round does
	// not wait at all (its member count is the last one's).
	g.pollFor = time.Millisecond
	g.lastMembers = 3
	appended.Add(1)
	require.NoError(t, waitFor(3))
	assert.Equal(t, 1, g.lastMembers)
	g.pollFor = time.Hour
	appended.Add(1)
	require.NoError(t, waitFor(4))
	assert.Equal(t, int32(3), rounds.Load())
}
