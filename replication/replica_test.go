package replication

import (
	"bytes"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/store"
	"go.uber.org/zap"
)

// fakeFSM records what the replica applied.
type fakeFSM struct {
	ks *store.Keyspace

	mu       sync.Mutex
	aux      map[string]string
	commands []string
}

func (f *fakeFSM) LinkConfig() LinkConfig {
	return LinkConfig{Timeout: 10 * time.Second, NoDelay: true, ListeningPort: 7777}
}
func (f *fakeFSM) MasterAddr(string) (string, bool) { return "", false }
func (f *fakeFSM) NumDBs() int                      { return f.ks.NumDBs() }
func (f *fakeFSM) LoadPayload(data []byte, aux func(name, value []byte), _ <-chan struct{}) (int, int, error) {
	f.ks.FlushAll()
	keys := 0
	err := rdb.LoadFileWith(data, rdb.DefaultLimits(), rdb.FileHandlers{
		Key: func(k *rdb.LoadedKey) error {
			keys++
			k.Obj.SetIn(f.ks.DB(k.DB), k.Key)
			return nil
		},
		Aux: func(name, value []byte) error {
			f.mu.Lock()
			f.aux[string(name)] = string(value)
			f.mu.Unlock()
			aux(name, value)
			return nil
		}})
	return keys, 0, err
}
func (f *fakeFSM) OpenStream(net.Conn, int, <-chan struct{}) Stream { return fakeStream{f} }

type fakeStream struct{ f *fakeFSM }

func (s fakeStream) Apply(args [][]byte) bool {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.commands = append(s.f.commands, string(bytes.Join(args, []byte(" "))))
	return true
}
func (s fakeStream) InTransaction() bool { return false }
func (s fakeStream) DB() int             { return 0 }
func (s fakeStream) BeginBatch()         {}
func (s fakeStream) EndBatch()           {}
func (s fakeStream) Close()              {}

// The replica's side of a full sync against a scripted master, with the
// RDB sent with its length and with an EOF mark (diskless): the handshake
// in Redis's order, keep-alive newlines before the reply and the RDB, the
// file's keys and aux fields, the commands after it (counted and
// forwarded), and the state ROLE and INFO report. With the mark, the
// master sends the stream only after the replica's first ACK, as Redis.
func TestReplicaFullSyncFromScriptedMaster(t *testing.T) {
	for _, eof := range []bool{false, true} {
		t.Run(map[bool]string{false: "length", true: "eofmark"}[eof], func(t *testing.T) {
			testReplicaFullSync(t, eof)
		})
	}
}

func testReplicaFullSync(t *testing.T, eof bool) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	src := store.New(1, nil, nil)
	src.DB(0).SetString([]byte("k"), []byte("v"), false)
	var file bytes.Buffer
	fw := rdb.NewFileWriter(&file, rdb.Compressed, [2]string{"redis-ver", "7.0.15"}, [2]string{"repl-stream-db", "0"})
	fw.SelectDB(0, 1, 0)
	fw.Entry(src.DB(0).Find([]byte("k")))
	if err := fw.Finish(); err != nil {
		t.Fatal(err)
	}
	set := resp.AppendCommand(nil, "SET", "k2", "v2")

	const replID = "1111111111111111111111111111111111111111"
	const mark = "abcdefghijabcdefghijabcdefghijabcdefghij"
	handshake := make(chan []string, 1)
	masterDone := make(chan struct{})
	go func() {
		defer close(masterDone)
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		rd := resp.NewStreamReader(conn, resp.StreamLimits{})
		var got []string
		for {
			args, _, err := rd.ReadCommand(nil)
			if err != nil {
				return
			}
			got = append(got, string(bytes.Join(args, []byte(" "))))
			if string(args[0]) == "PSYNC" {
				break
			}
			_, _ = conn.Write([]byte("+OK\r\n"))
		}
		handshake <- got
		out := []byte("\n\n+FULLRESYNC " + replID + " 100\r\n\n")
		if eof {
			out = append(out, "$EOF:"+mark+"\r\n"...)
			out = append(out, file.Bytes()...)
			out = append(out, mark...)
		} else {
			out = append(out, "$"+strconv.Itoa(file.Len())+"\r\n"...)
			out = append(out, file.Bytes()...)
		}
		if _, err := conn.Write(out); err != nil {
			return
		}
		if eof {
			// Nothing follows the mark before the replica's ACK.
			args, _, err := rd.ReadCommand(nil)
			if err != nil || len(args) != 3 || string(args[1]) != "ACK" {
				return
			}
		}
		if _, err := conn.Write(set); err != nil {
			return
		}
		// Hold the link until the replica drops it (ACKs are drained).
		buf := make([]byte, 512)
		for {
			if _, err := conn.Read(buf); err != nil {
				return
			}
		}
	}()

	fsm := &fakeFSM{ks: store.New(1, nil, nil), aux: map[string]string{}}
	fsm.ks.DB(0).SetString([]byte("old"), []byte("x"), false) // flushed by the sync
	m := NewMaster(Config{})
	r := NewReplica(m, fsm, zap.NewNop())
	port := ln.Addr().(*net.TCPAddr).Port
	r.Start("127.0.0.1", port, "")
	defer func() {
		r.Forget(true)
		<-masterDone
	}()

	select {
	case got := <-handshake:
		id, _ := m.IDs()
		want := []string{"PING", "REPLCONF listening-port 7777", "REPLCONF capa eof capa psync2", "PSYNC " + id + " 1"}
		if len(got) != len(want) {
			t.Fatalf("handshake %q, want %q", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("handshake %q, want %q", got, want)
			}
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no handshake")
	}
	deadline := time.Now().Add(20 * time.Second)
	for r.StateName() != "connected" || r.Syncing() || m.Offset() != 100+int64(len(set)) {
		if time.Now().After(deadline) {
			t.Fatalf("state %q syncing %v offset %d", r.StateName(), r.Syncing(), m.Offset())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !r.Up() {
		t.Error("link not up")
	}
	if host, p := r.Master(); host != "127.0.0.1" || p != port {
		t.Errorf("master %s:%d", host, p)
	}
	if id, _ := m.IDs(); id != replID {
		t.Errorf("replication ID %s, want the master's", id)
	}
	fsm.mu.Lock()
	defer fsm.mu.Unlock()
	if fsm.aux["repl-stream-db"] != "0" {
		t.Errorf("aux fields %v", fsm.aux)
	}
	if len(fsm.commands) != 1 || fsm.commands[0] != "SET k2 v2" {
		t.Errorf("commands %q", fsm.commands)
	}
	if e := fsm.ks.DB(0).Find([]byte("k")); e == nil || string(e.Bytes()) != "v" {
		t.Error("the RDB's key is not in the keyspace")
	}
	if fsm.ks.DB(0).Find([]byte("old")) != nil {
		t.Error("the data from before the sync survived")
	}
	if r.BytesIn() <= int64(file.Len()) {
		t.Errorf("bytes in %d", r.BytesIn())
	}
}

// guardFSM is a fakeFSM with an EmptyHistoryGuard that records its calls.
type guardFSM struct {
	*fakeFSM
	refuse bool
	asked  []string
}

func (g *guardFSM) RefuseEmptyHistory(master string) bool {
	g.asked = append(g.asked, master)
	return g.refuse
}

// The guard is asked only about a new history behind ours from the master
// (same cluster node) whose stream we hold, and its answer is final.
func TestReplicaAsksGuardOnlyAboutAShorterNewHistory(t *testing.T) {
	const mine, other = "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	g := &guardFSM{fakeFSM: &fakeFSM{ks: store.New(1, nil, nil), aux: map[string]string{}}, refuse: true}
	m := NewMaster(Config{})
	m.ResetTo(mine, 500, 0)
	r := NewReplica(m, g, zap.NewNop())
	a := &masterLink{nodeID: "node-a"}

	var emptyFile bytes.Buffer
	if err := rdb.NewFileWriter(&emptyFile, rdb.Compressed, [2]string{"redis-ver", "7.0.15"}).Finish(); err != nil {
		t.Fatal(err)
	}
	empty := emptyFile.Bytes()
	if r.refuseEmptyHistory(a, other, 0, empty) {
		t.Fatal("refused before any sync with node-a")
	}
	r.syncedFrom.Store(&a.nodeID)
	for _, c := range []struct {
		link   *masterLink
		replid string
		offset int64
	}{
		{&masterLink{}, other, 0},                 // not cluster mode
		{&masterLink{nodeID: "node-b"}, other, 0}, // another master (CLUSTER REPLICATE, a sibling promoted)
		{a, other, 500},                           // not behind us
		{a, mine, 10},                             // our own history
	} {
		if r.refuseEmptyHistory(c.link, c.replid, c.offset, empty) {
			t.Errorf("refused %+v", c)
		}
	}
	// A master restarted with its data (an RDB file) brings its keys.
	var withKeys bytes.Buffer
	src := store.New(1, nil, nil).DB(0)
	fw := rdb.NewFileWriter(&withKeys, rdb.Compressed)
	fw.SelectDB(0, 1, 0)
	fw.Entry(src.SetString([]byte("k"), []byte("v"), false))
	if err := fw.Finish(); err != nil {
		t.Fatal(err)
	}
	if r.refuseEmptyHistory(a, other, 0, withKeys.Bytes()) {
		t.Error("refused a master that brings keys")
	}
	if len(g.asked) != 0 {
		t.Fatalf("guard asked %v", g.asked)
	}
	if !r.refuseEmptyHistory(a, other, 0, empty) || len(g.asked) != 1 || g.asked[0] != "node-a" {
		t.Fatalf("a restarted master's empty history: asked %v", g.asked)
	}
	g.refuse = false
	if r.refuseEmptyHistory(a, other, 499, empty) {
		t.Fatal("the guard's acceptance was overridden")
	}
}
