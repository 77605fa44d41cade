package replication

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shoal-db/shoal/rdb"
	"github.com/shoal-db/shoal/resp"
	"github.com/shoal-db/shoal/slots"
	"github.com/shoal-db/shoal/store"
	"go.uber.org/zap"
)

// A slot image carries every live key of the slot (string or RDB value,
// with its expiry) and applying it replaces the slot exactly.
func TestSlotImageRoundTrip(t *testing.T) {
	src := store.New(1, nil, nil).DB(0)
	str, list := []byte("{t}str"), []byte("{t}list")
	slot := slots.KeySlot(str)
	e := src.SetString(str, []byte("value"), false)
	src.SetExpire(str, e, time.Now().Add(time.Hour).UnixMilli())
	l := store.NewList(-2)
	for _, v := range []string{"a", "b", "c"} {
		l.Push([]byte(v), false)
	}
	src.SetValue(list, l)

	src.Lock(slot)
	img, _ := AppendSlotImage(nil, src, 0, slot, nil)
	src.Unlock(slot)

	rd := resp.NewStreamReader(bytes.NewReader(img), resp.StreamLimits{})
	args, _, err := rd.ReadCommand(nil)
	if err != nil || len(args) != 4 || string(args[0]) != ImageCommand || string(args[1]) != "0" ||
		string(args[2]) != strconv.Itoa(int(slot)) {
		t.Fatalf("image command: %q, %v", args, err)
	}
	dst := store.New(1, nil, nil).DB(0)
	dst.SetString([]byte("{t}stale"), []byte("x"), false) // replaced by the image
	if err := ApplySlotImage(dst, slot, args[3], rdb.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	if dst.Find([]byte("{t}stale")) != nil {
		t.Error("a key the image does not hold survived")
	}
	for _, k := range [][]byte{str, list} {
		a, b := src.Find(k), dst.Find(k)
		if b == nil {
			t.Fatalf("%s missing after the image", k)
		}
		if !bytes.Equal(rdb.DumpPayload(a), rdb.DumpPayload(b)) || a.ExpireAt() != b.ExpireAt() {
			t.Errorf("%s differs after the image", k)
		}
	}
}

// A malformed image is a protocol error (the link drops and resyncs).
func TestSlotImageRejectsMalformedPayloads(t *testing.T) {
	db := store.New(1, nil, nil).DB(0)
	for _, p := range []string{
		"$1\r\nk\r\n",                               // key only
		"$1\r\nk\r\n$1\r\n0\r\n",                    // no value
		"$1\r\nk\r\n$1\r\nx\r\n$2\r\nSv\r\n",        // expiry not a number
		"$1\r\nk\r\n$1\r\n0\r\n$2\r\nXv\r\n",        // unknown value kind
		"$1\r\nk\r\n$1\r\n0\r\n$3\r\nR\x00\x01\r\n", // bad RDB value
		"$9\r\nk\r\n",                               // length past the end
		"$-1\r\n",                                   // not a bulk length
	} {
		if err := ApplySlotImage(db, 0, []byte(p), rdb.DefaultLimits()); !errors.Is(err, ErrProtocol) {
			t.Errorf("%q: %v, want ErrProtocol", p, err)
		}
	}
}

// fakeFSM records what the replica applied.
type fakeFSM struct {
	ks *store.Keyspace

	mu       sync.Mutex
	aux      map[string]string
	images   []uint16
	commands []string
}

func (f *fakeFSM) LinkConfig() LinkConfig {
	return LinkConfig{Timeout: 10 * time.Second, NoDelay: true, ListeningPort: 7777}
}
func (f *fakeFSM) MasterAddr(string) (string, bool) { return "", false }
func (f *fakeFSM) NumDBs() int                      { return f.ks.NumDBs() }
func (f *fakeFSM) LoadPayload(data []byte, aux func(name, value []byte)) (int, int, error) {
	f.ks.FlushAll()
	err := rdb.LoadFileWith(data, rdb.DefaultLimits(), rdb.FileHandlers{Aux: func(name, value []byte) error {
		f.mu.Lock()
		f.aux[string(name)] = string(value)
		f.mu.Unlock()
		aux(name, value)
		return nil
	}})
	return 0, 0, err
}
func (f *fakeFSM) ApplyImage(db int, slot uint16, payload []byte) error {
	f.mu.Lock()
	f.images = append(f.images, slot)
	f.mu.Unlock()
	return ApplySlotImage(f.ks.DB(db), slot, payload, rdb.DefaultLimits())
}
func (f *fakeFSM) OpenStream(net.Conn, int) Stream { return fakeStream{f} }

type fakeStream struct{ f *fakeFSM }

func (s fakeStream) Apply(args [][]byte) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.commands = append(s.f.commands, string(bytes.Join(args, []byte(" "))))
}
func (s fakeStream) InTransaction() bool { return false }
func (s fakeStream) DB() int             { return 0 }
func (s fakeStream) BeginBatch()         {}
func (s fakeStream) EndBatch()           {}
func (s fakeStream) Close()              {}

// The replica's side of a full sync against a scripted master: the
// handshake in Redis's order, the payload's aux fields, the slot images
// (not counted in the offset), the commands (counted and forwarded), and
// the state ROLE and INFO report.
func TestReplicaFullSyncFromScriptedMaster(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srcKS := store.New(1, nil, nil)
	slot := slots.KeySlot([]byte("k"))
	srcKS.DB(0).SetString([]byte("k"), []byte("v"), false)
	srcKS.DB(0).Lock(slot)
	img, _ := AppendSlotImage(nil, srcKS.DB(0), 0, slot, nil)
	srcKS.DB(0).Unlock(slot)
	set := resp.AppendCommand(nil, "SET", "k2", "v2")

	const replID = "1111111111111111111111111111111111111111"
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
		payload := SyncPreamble("7.0.15", nil, 0)
		var out []byte
		out = append(out, "+FULLRESYNC "+replID+" 100\r\n"...)
		out = append(out, "$"+strconv.Itoa(len(payload))+"\r\n"...)
		out = append(out, payload...)
		out = append(out, img...)
		out = append(out, set...)
		out = append(out, resp.AppendCommand(nil, ImageCommand, "DONE")...)
		if _, err := conn.Write(out); err != nil {
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
	m := NewMaster(Config{})
	r := NewReplica(m, fsm, zap.NewNop())
	port := ln.Addr().(*net.TCPAddr).Port
	r.Start("127.0.0.1", port, "")
	defer func() {
		r.Forget()
		<-masterDone
	}()

	select {
	case got := <-handshake:
		id, _ := m.IDs()
		want := []string{"PING", "REPLCONF listening-port 7777", "REPLCONF capa psync2", "PSYNC " + id + " 1"}
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
	if fsm.aux[AuxSlotImages] != "1" || fsm.aux["repl-stream-db"] != "0" {
		t.Errorf("aux fields %v", fsm.aux)
	}
	if len(fsm.images) != 1 || fsm.images[0] != slot {
		t.Errorf("images %v, want slot %d", fsm.images, slot)
	}
	if len(fsm.commands) != 1 || fsm.commands[0] != "SET k2 v2" {
		t.Errorf("commands %q", fsm.commands)
	}
	if e := fsm.ks.DB(0).Find([]byte("k")); e == nil || string(e.Bytes()) != "v" {
		t.Error("the image's key is not in the keyspace")
	}
	if r.BytesIn() <= int64(len(set)) {
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

	empty := SyncPreamble("7.0.15", nil, 0, [2]string{AuxKeys, "0"})
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
	// A master restarted with its data (an RDB file) brings its keys, as
	// slot images or in the payload.
	withImages := SyncPreamble("7.0.15", nil, 0, [2]string{AuxKeys, "3333"})
	var withKeys bytes.Buffer
	src := store.New(1, nil, nil).DB(0)
	fw := rdb.NewFileWriter(&withKeys)
	fw.SelectDB(0, 1, 0)
	fw.Entry(src.SetString([]byte("k"), []byte("v"), false))
	if err := fw.Finish(); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][]byte{withImages, withKeys.Bytes()} {
		if r.refuseEmptyHistory(a, other, 0, p) {
			t.Error("refused a master that brings keys")
		}
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
