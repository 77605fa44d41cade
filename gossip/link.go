package gossip

import (
	"bufio"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Cluster links (Redis's clusterLink): one persistent stream per peer for
// the bus messages that are not sent as best-effort packets.
//
// A "to" link (outLink) is a connection this node dials to a peer's bus
// port. It owns a user-space send buffer: the messages queued for the peer
// and not yet written to the socket. One writer goroutine per link drains
// it; a peer that stops reading (SIGSTOP) fills the kernel's buffers, the
// writer blocks and the send buffer grows, until the cron frees the link
// past cluster-link-sendbuf-limit (freeLinksOverLimit) and counts it.
//
// A "from" link (inLink) is a connection a peer dialed to us. It shares the
// bus port with memberlist's own streams: a link opens with linkMagic, a
// byte no memberlist stream starts with (memberlist's message types are
// 0-13 and its label marker 244; an encrypted stream starts with 10), and
// the guard transport hands such connections here instead of to memberlist.
// Over tls-cluster the link is a TLS stream of the TLS transport ('s'),
// followed by the same byte. The inbound link belongs to the node named as
// sender by its first message (as Redis's inbound link gets its node), and
// a newer inbound link from the same node replaces the older one.
//
// Frames are a 4-byte big-endian length and the payload: an encoded
// Message, or with cluster-bus-secret the message sealed with AES-GCM
// under the first secret (a 12-byte random nonce, then the ciphertext and
// tag); every secret opens. A length over linkMaxFrame drops the
// connection before anything is allocated, and the payload is read in
// bounded chunks within the bus guard's in-flight budget (streamSource).
//
// The links' lifetime follows the State's view of them: the cron keeps a
// link to every node the State considers linked (a non-zero linkTime)
// and closes the others (link timeout, DEBUG CLUSTERLINK KILL, a forgotten
// node, a changed address); the State's next PING then opens a new one.

const (
	// linkMagic is the first byte of a cluster link stream.
	linkMagic byte = 0xB5
	// linkSealOverhead is the nonce and GCM tag of a sealed frame.
	linkSealOverhead = 12 + 16
	// linkMaxFrame bounds a frame's payload.
	linkMaxFrame = MaxMessageSize + linkSealOverhead
	// linkDialTimeout bounds a link's connect (and TLS handshake).
	linkDialTimeout = 5 * time.Second
	// linkPeekTimeout bounds the wait for an accepted stream's first byte.
	linkPeekTimeout = 5 * time.Second
	// maxInboundLinks bounds the accepted links held at once (a cluster
	// has at most a few thousand nodes; anyone reaching the bus port can
	// connect).
	maxInboundLinks = 4096
)

var errLinkClosed = errors.New("gossip: cluster link closed")

// busLinks is the Bus's set of cluster links.
type busLinks struct {
	b  *Bus
	mu sync.Mutex
	// out is the "to" link per peer id; in the accepted links.
	out    map[string]*outLink
	in     map[*inLink]struct{}
	want   map[string]linkPeer // sync's scratch, emptied and refilled each call
	closed bool
	wg     sync.WaitGroup // writers and readers
}

func newBusLinks(b *Bus) *busLinks {
	return &busLinks{b: b, out: make(map[string]*outLink), in: make(map[*inLink]struct{}), want: make(map[string]linkPeer)}
}

// outLink is the link to one peer.
type outLink struct {
	ls      *busLinks
	id      string // the peer's node id
	addr    string // its bus address
	created time.Time
	// stateTime is the State's linkTime this link stands for (zero until
	// the cron adopts a link a message created).
	stateTime time.Time

	wake chan struct{} // cap 1: the queue got a message
	done chan struct{} // closed when the link is freed

	// Guarded by ls.mu:
	queue  []outMsg
	queued int64 // bytes of queue, sizeHint each
	// writing and wcap are the frame being written: its unwritten bytes
	// and its buffer's capacity (the send buffer's used and allocated
	// part beyond the queue).
	writing, wcap int64
	conn          net.Conn
	freed         bool
	carried       bool // a message was queued on it
}

// inLink is a peer's link to us.
type inLink struct {
	conn    net.Conn
	created time.Time
	id      string // the sender of its first message; guarded by busLinks.mu
}

// offer queues m on the link to m.to when must is set or the link has
// carried nothing yet (a new link opens with the State's message, as
// Redis's opens with a PING: it names us to the peer), creating the link
// when there is none (or when the peer's address changed). False: m was
// not queued (the caller sends it as a packet; dropped after Stop).
func (ls *busLinks) offer(m outMsg, must bool) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return false
	}
	l := ls.out[m.to]
	if l != nil && l.addr != m.addr {
		ls.freeLocked(l)
		l = nil
	}
	if l != nil && l.carried && !must {
		return false
	}
	if l == nil {
		l = ls.newLocked(m.to, m.addr)
	}
	l.carried = true
	l.queue = append(l.queue, m)
	l.queued += int64(m.size)
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return true
}

// newLocked creates and starts the link to id at addr.
func (ls *busLinks) newLocked(id, addr string) *outLink {
	l := &outLink{ls: ls, id: id, addr: addr, created: time.Now(),
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	ls.out[id] = l
	ls.wg.Add(1)
	go l.run()
	return l
}

// freeLocked drops l: its queue is discarded and its connection closed.
func (ls *busLinks) freeLocked(l *outLink) {
	if l.freed {
		return
	}
	l.freed = true
	if ls.out[l.id] == l {
		delete(ls.out, l.id)
	}
	l.queue, l.queued = nil, 0
	close(l.done)
	if l.conn != nil {
		closeNow(l.conn)
	}
}

// closeNow closes c, first unblocking a write in progress (a TLS Close
// would otherwise wait for it to send its close alert).
func closeNow(c net.Conn) {
	_ = c.SetDeadline(time.Now())
	_ = c.Close()
}

// linkPeer is a node the State considers linked: its id, bus address and
// the State's link time.
type linkPeer struct {
	id, addr string
	since    time.Time
}

// sync makes the "to" links match peers: a link for each (one created by a
// message is adopted; one made for an older State link time or another
// address is replaced), none for anyone else.
func (ls *busLinks) sync(peers []linkPeer) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return
	}
	want := ls.want
	clear(want)
	for _, p := range peers {
		want[p.id] = p
	}
	for id, l := range ls.out {
		p, ok := want[id]
		if !ok || p.addr != l.addr || (!l.stateTime.IsZero() && !l.stateTime.Equal(p.since)) {
			ls.freeLocked(l)
		}
	}
	for _, p := range peers {
		l := ls.out[p.id]
		if l == nil {
			l = ls.newLocked(p.id, p.addr)
		}
		if l.stateTime.IsZero() {
			l.stateTime = p.since
		}
	}
}

// overLimit frees every link whose send buffer passed limit bytes and
// returns their peers' ids.
func (ls *busLinks) overLimit(limit uint64) []string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var freed []string
	for id, l := range ls.out {
		used := l.queued + l.writing
		if used <= 0 || uint64(used) <= limit {
			continue
		}
		ls.b.log.Warn(fmt.Sprintf("Freeing cluster link(to node %.40s, used memory: %d) due to exceeding send buffer memory limit.",
			id, used))
		ls.freeLocked(l)
		freed = append(freed, id)
	}
	return freed
}

// killInbound closes the inbound links from id (DEBUG CLUSTERLINK KILL).
func (ls *busLinks) killInbound(id string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for in := range ls.in {
		if in.id == id {
			delete(ls.in, in)
			closeNow(in.conn)
		}
	}
}

// close frees every link; wait then waits for their goroutines (a writer
// still connecting returns when its dial does: Stop shuts the transport
// down in between).
func (ls *busLinks) close() {
	ls.mu.Lock()
	ls.closed = true
	for _, l := range ls.out {
		ls.freeLocked(l)
	}
	for in := range ls.in {
		delete(ls.in, in)
		closeNow(in.conn)
	}
	ls.mu.Unlock()
}

func (ls *busLinks) wait() { ls.wg.Wait() }

// linkInfo is one link as CLUSTER LINKS shows it.
type linkInfo struct {
	created         time.Time
	alloc, used     int64
	writePending    bool
	present, inPres bool
	inCreated       time.Time
}

// info is the "to" and "from" links of the peer id.
func (ls *busLinks) info(id string) linkInfo {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	var li linkInfo
	if l := ls.out[id]; l != nil {
		li.present = true
		li.created = l.created
		li.used = l.queued + l.writing
		li.alloc = max(l.queued+l.wcap, li.used) // a frame being encoded has no buffer yet
		li.writePending = li.used > 0
	}
	for in := range ls.in {
		if in.id == id {
			li.inPres, li.inCreated = true, in.created
		}
	}
	return li
}

// run is the link's writer: it connects, then writes the queue in order.
// A failed connect or write frees the link (its queue is lost, as Redis's
// freed link's buffer is); the cron or the next message makes a new one.
func (l *outLink) run() {
	defer l.ls.wg.Done()
	conn, err := l.ls.b.dialLink(l.addr)
	l.ls.mu.Lock()
	if err != nil || l.freed {
		if err != nil {
			l.ls.b.log.Debug("cluster link connect failed", zap.String("to", l.id), zap.Error(err))
		}
		l.ls.freeLocked(l)
		l.ls.mu.Unlock()
		if conn != nil {
			_ = conn.Close()
		}
		return
	}
	l.conn = conn
	l.ls.mu.Unlock()
	// The peer never writes on our link: a read returns when it closes
	// the connection (a restart), which frees the link at once.
	l.ls.wg.Add(1)
	go func() {
		defer l.ls.wg.Done()
		var buf [64]byte
		for {
			if _, err := conn.Read(buf[:]); err != nil {
				l.free()
				return
			}
		}
	}()
	var frame []byte
	for {
		select {
		case <-l.done:
			return
		case <-l.wake:
		}
		for {
			l.ls.mu.Lock()
			if l.freed || len(l.queue) == 0 {
				l.ls.mu.Unlock()
				break
			}
			m := l.queue[0]
			l.queue[0] = outMsg{}
			l.queue = l.queue[1:]
			l.queued -= int64(m.size)
			l.writing = int64(m.size)
			l.ls.mu.Unlock()
			frame = l.ls.b.linkFrame(frame[:0], m)
			l.ls.mu.Lock()
			l.writing, l.wcap = int64(len(frame)), int64(cap(frame))
			l.ls.mu.Unlock()
			_, err := conn.Write(frame)
			l.ls.mu.Lock()
			l.writing = 0
			if cap(frame) > 64<<10 {
				frame = nil // a large PUBLISH's buffer is not kept
			}
			l.wcap = int64(cap(frame))
			l.ls.mu.Unlock()
			if err != nil {
				l.ls.b.log.Debug("cluster link write failed", zap.String("to", l.id), zap.Error(err))
				l.free()
				return
			}
		}
	}
}

func (l *outLink) free() {
	l.ls.mu.Lock()
	l.ls.freeLocked(l)
	l.ls.mu.Unlock()
}

// dialLink connects to a peer's bus port for a link: through the current
// memberlist transport (TCP, TLS or a test network; from bind-source-addr
// when set), then the link's first byte.
func (b *Bus) dialLink(addr string) (net.Conn, error) {
	gt := b.transport.Load()
	if gt == nil {
		return nil, errLinkClosed
	}
	c, err := gt.dialRaw(addr, linkDialTimeout)
	if err != nil {
		return nil, err
	}
	return withFirstByte(c, linkMagic, linkDialTimeout)
}

// linkFrame appends m's frame to dst.
func (b *Bus) linkFrame(dst []byte, m outMsg) []byte {
	if m.msg.IP == "" {
		// We do not know our address yet: name the one this message
		// leaves from, which is what Redis's receiver reads from the
		// connection (the sender's peer address).
		if host, _, err := net.SplitHostPort(m.addr); err == nil {
			m.msg.IP = b.sourceIP(host)
		}
	}
	key := b.sealKey()
	if key == nil {
		// Encoded in place after its length.
		at := len(dst)
		dst = m.msg.AppendEncoded(binary.BigEndian.AppendUint32(dst, 0))
		b.msgs.Put(m.msg)
		n := len(dst) - at - 4
		b.bytesSent.Add(uint64(n))
		binary.BigEndian.PutUint32(dst[at:], uint32(n))
		return dst
	}
	msg := m.msg.Encode()
	b.msgs.Put(m.msg)
	b.bytesSent.Add(uint64(len(msg)))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(msg)+linkSealOverhead))
	return seal(dst, key, msg)
}

// sealKey is the key that seals link frames (nil: no cluster secret).
func (b *Bus) sealKey() []byte {
	b.secretMu.Lock()
	defer b.secretMu.Unlock()
	if b.keyring == nil {
		return nil
	}
	return b.keyring.GetPrimaryKey()
}

// openKeys are the keys that open link frames (none: plaintext).
func (b *Bus) openKeys() [][]byte {
	b.secretMu.Lock()
	defer b.secretMu.Unlock()
	if b.keyring == nil {
		return nil
	}
	return b.keyring.GetKeys()
}

// seal appends nonce || AES-GCM(key, msg) to dst.
func seal(dst, key, msg []byte) []byte {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic("gossip: bad keyring key: " + err.Error()) // the keyring checks key sizes
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		panic("gossip: " + err.Error())
	}
	start := len(dst)
	dst = append(dst, make([]byte, gcm.NonceSize())...)
	if _, err := rand.Read(dst[start:]); err != nil {
		panic("gossip: no randomness for a nonce: " + err.Error())
	}
	return gcm.Seal(dst, dst[start:], msg, nil)
}

// open returns the message sealed in frame by one of keys.
func open(keys [][]byte, frame []byte) ([]byte, bool) {
	if len(frame) < linkSealOverhead {
		return nil, false
	}
	return gcmOpen(keys, frame[:12], frame[12:])
}

// acceptLink serves a peer's link (the guard transport read its first
// byte): each frame's message goes to the inbox as memberlist's messages
// do. The link is dropped on a malformed frame.
func (ls *busLinks) acceptLink(c net.Conn) {
	in := &inLink{conn: c, created: time.Now()}
	ls.mu.Lock()
	if ls.closed || len(ls.in) >= maxInboundLinks {
		ls.mu.Unlock()
		_ = c.Close()
		return
	}
	ls.in[in] = struct{}{}
	ls.wg.Add(1)
	ls.mu.Unlock()
	go func() {
		defer ls.wg.Done()
		err := ls.read(in)
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isTimeout(err) {
			ls.b.guard.reject(c.RemoteAddr(), "cluster link", err)
		}
		ls.mu.Lock()
		delete(ls.in, in)
		ls.mu.Unlock()
		_ = c.Close()
	}()
}

var errLinkFrame = errors.New("cluster link frame out of bounds")

// read reads in's frames until the connection ends or one is refused.
func (ls *busLinks) read(in *inLink) error {
	b := ls.b
	r := bufio.NewReaderSize(in.conn, 16<<10)
	var held atomic.Int64
	defer func() { b.guard.inflight.Add(-held.Swap(0)) }()
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint32(hdr[:]))
		if n < headerFixedLen || n > linkMaxFrame {
			return errLinkFrame
		}
		src := &streamSource{r: r, budget: n, g: b.guard, held: &held}
		frame, err := src.take(n)
		if err != nil {
			return err
		}
		msg := frame // a buffer of its own: src is not reused
		if keys := b.openKeys(); len(keys) > 0 {
			var ok bool
			if msg, ok = open(keys, frame); !ok {
				return errors.New("cluster link frame not authenticated by the cluster secret")
			}
		}
		b.guard.inflight.Add(-held.Swap(0))
		if len(msg) < headerFixedLen || len(msg) > MaxMessageSize {
			return errLinkFrame
		}
		ls.identify(in, msg)
		b.bytesRecv.Add(uint64(len(msg)))
		if !b.inbox.push(msg) {
			b.dropped.Add(1)
		}
	}
}

// identify gives in the node of its first message's sender; an older
// inbound link of that node is closed (Redis keeps one per node).
func (ls *busLinks) identify(in *inLink, msg []byte) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if in.id != "" {
		return
	}
	r := &reader{b: msg[8:]}
	id := r.id()
	if id == "" || r.bad {
		return
	}
	in.id = id
	for o := range ls.in {
		if o != in && o.id == id {
			delete(ls.in, o)
			closeNow(o.conn)
		}
	}
}
