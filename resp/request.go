package resp

import (
	"bytes"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/strconvx"
)

// RequestReader sits between a client socket and the command loop. It
// parses the request stream the way Redis's
// processInlineBuffer/processMultibulkBuffer do, enforces every size limit
// BEFORE anything is buffered for it (proto-max-bulk-len, the 64 KiB inline
// and header-line limits, client-query-buffer-limit, the unauthenticated
// limits), turns inline commands into multibulk ones with Redis's quoting
// rules, drops empty multibulks, and hands out canonical RESP only, whole
// commands at a time (ReadBatch), which SplitCanonical then splits without
// parsing them again.
//
// On a protocol error the reader first hands out every complete command
// before the bad bytes; on the next ReadBatch it writes Redis's exact error
// line ("-ERR Protocol error: ...") to the socket and fails with
// ErrProtocolClosed, and the caller closes the connection.
//
// A RequestReader is the net.Conn it wraps (embedded: the owner writes
// replies and closes the socket through it). It is used by its
// connection's goroutine only, except for the statistics (QueryBuffered,
// BufferSize, BytesRead), which other goroutines may read at any time.
type RequestReader struct {
	net.Conn
	lim *ConnLimits

	inBuf    []byte // read buffer; in is its unparsed window
	in       []byte
	out      []byte // canonical bytes produced, not yet handed out by ReadBatch
	complete int    // out[:complete] holds whole commands; the rest is a partial one
	spare    []byte // a batch handed back by Recycle, for the next batch
	bigSpare []byte // a big command's batch handed back by Recycle, for a big argument that follows (bigSpareMax)
	handed   []byte // the buffer of the last batch handed out, whole capacity
	args     int    // arguments of the whole commands in out[:complete]
	cmdArgs  int    // arguments of the command being parsed

	st       requestState
	argsLeft int   // arguments still expected in the current multibulk
	bulkLeft int64 // payload bytes (plus the 2 trailing ones) still expected
	bulkLen  int64 // payload length of the argument being read
	argBytes int64 // payload bytes of the arguments of the current, incomplete command already read whole
	cmdBytes int64 // bytes of the current, incomplete command
	bigCmd   bool  // the current command has a big argument (bigArg): it ends its batch

	protoErr  string // pending protocol error, sent on the next ReadBatch
	closeErr  error  // pending silent close
	deadlined bool   // a read deadline is set on the socket

	// Statistics for CLIENT LIST / INFO and client eviction (written by
	// the owner goroutine, see publish).
	qbuf      atomic.Int64 // bytes buffered and not yet parsed, plus the partial argument's payload
	argv      atomic.Int64 // argBytes
	held      atomic.Int64 // capacity of the reader's buffers (inBuf, out, spare)
	bufSize   atomic.Int64 // len(inBuf), for readers on other goroutines
	readBytes atomic.Int64 // total bytes read from the socket
}

// An argument of bigArg bytes or more (Redis's PROTO_MBULK_BIG_ARG) gets
// room for its announced size as soon as its length is read, as Redis's
// sdsMakeRoomForNonGreedy gives its query buffer: the memory a client holds
// — which client eviction counts — is then the size it announced, whatever
// the pace of its reads. That room is reserved up to bigArgReserve at once
// (the size is already bounded by proto-max-bulk-len and
// client-query-buffer-limit, but a few header bytes must not reserve
// hundreds of megabytes); a longer argument's buffer doubles as its bytes
// arrive, its last step clamped to the announced size, so that it ends at
// that size too.
//
// A batch that held a big argument's command and is handed back (Recycle)
// serves the next big argument if it is at most bigSpareMax and at most
// twice what that argument needs: a pipeline of large SETs then allocates
// (and clears) nothing per command. It is kept until the next batch is
// handed out only, so a client that stops sending big arguments lets it go
// with its next command (Redis likewise keeps a query buffer of the last
// big argument's size for the next one, until its cron trims it).
const (
	bigArg        = 32 * 1024
	bigArgReserve = 16 << 20
	bigSpareMax   = 1 << 20
)

// takeBigSpare returns the recycled big buffer, emptied, if it fits need
// bytes without holding much more (see bigSpareMax), or nil. The spare is
// gone either way.
func (g *RequestReader) takeBigSpare(need int) []byte {
	b := g.bigSpare
	g.bigSpare = nil
	if cap(b) >= need && cap(b) <= 2*need {
		return b[:0]
	}
	return nil
}

// A command with a big argument gets a batch of its own: the whole commands
// before it are handed out before its room is reserved, and it is handed
// out as soon as it is complete. Its buffer then holds the command alone,
// reserved once at the size it announced, and is never copied to make room
// for the commands around it (at 100 KB values and -P 16 those copies, the
// growth of the buffer past it, and their clearing were most of the
// reader's cost). While the argument still owes more than the read buffer
// holds, its payload is read from the socket straight into that room
// (readBulk), as Redis reads a big argument into its exactly-sized query
// buffer, without passing through the read buffer.

// reserveBulk makes room in out for k more payload bytes of a big argument
// (see bigArg), bulkLeft being what the argument still owes.
func (g *RequestReader) reserveBulk(k int64) {
	room := int64(cap(g.out) - len(g.out))
	if k <= room {
		return
	}
	want := min(g.bulkLeft, max(int64(cap(g.out)), bigArgReserve, k))
	size := int64(len(g.out)) + want
	nb := g.takeBigSpare(int(size))
	if nb == nil {
		nb = make([]byte, len(g.out), size)
	} else {
		nb = nb[:len(g.out)]
	}
	copy(nb, g.out)
	if g.complete == 0 && g.spare == nil && cap(g.out) <= 4*ReadSize {
		// Nothing was handed out of the old buffer: it serves the batch
		// after this command's instead of a new allocation.
		g.spare = g.out[:0]
	}
	g.out = nb
}

// bigBulkPending reports whether the big argument being read still owes
// more payload than a read into the read buffer could take: readBulk then
// reads it straight into its room in out.
func (g *RequestReader) bigBulkPending() bool {
	return g.st == stBulkPayload && g.bulkLen >= bigArg && len(g.in) == 0 &&
		g.bulkLeft-2 > int64(len(g.inBuf))
}

// readBulk reads payload bytes of the big argument being read from the
// socket straight into out, at most the payload it still owes (its CRLF and
// what follows go through the read buffer). The room grows as reserveBulk
// lets it: a client that announces a huge argument and sends a few bytes
// does not make the reader reserve the announced size.
func (g *RequestReader) readBulk() error {
	data := g.bulkLeft - 2
	if cap(g.out) == len(g.out) {
		g.reserveBulk(min(data, bigArgReserve))
	}
	end := len(g.out) + int(min(data, int64(cap(g.out)-len(g.out))))
	g.armDeadline()
	n, err := g.Conn.Read(g.out[len(g.out):end])
	g.out = g.out[:len(g.out)+n]
	g.bulkLeft -= int64(n)
	g.readBytes.Add(int64(n))
	g.publish()
	if n > 0 {
		return nil
	}
	return err
}

type requestState uint8

const (
	stCommandStart requestState = iota
	stBulkHeader
	stBulkPayload
)

// Limits are the live request bounds every reader of a server consults; the
// server stores new values when CONFIG SET changes the directives, and the
// readers see them on their next parse.
type Limits struct {
	ProtoMaxBulkLen atomic.Int64 // proto-max-bulk-len: bytes per argument
	QueryBufLimit   atomic.Int64 // client-query-buffer-limit: bytes per command; 0 = none
	IdleTimeout     atomic.Int64 // timeout: seconds a socket read may wait; 0 = never
}

// ConnLimits is one connection's view: the shared limits plus the answers
// that depend on the client. A nil func answers false.
type ConnLimits struct {
	Shared *Limits
	// AuthRequired reports whether the client must still authenticate
	// (Redis's smaller limits for unauthenticated clients apply).
	AuthRequired func() bool
	// IdleExempt reports whether the client is exempt from the idle timeout
	// right now (it waits in a blocking command).
	IdleExempt func() bool
	// OnPartial is called by the owner goroutine after a read that left a
	// command incomplete, before it reads again: the server accounts the
	// bytes the reader holds (client eviction) and may close the socket.
	OnPartial func()
}

const (
	// InlineMaxSize is Redis's PROTO_INLINE_MAX_SIZE: the longest inline
	// command or multibulk header line before a protocol error.
	InlineMaxSize = 64 * 1024
	// ReadSize is a request reader's initial buffer and read size.
	ReadSize          = 16 * 1024
	protoMaxMultibulk = 1<<31 - 1 // INT_MAX
)

var (
	// ErrProtocolClosed is ReadBatch's error after it wrote a protocol
	// error line to the socket: the connection must be closed.
	ErrProtocolClosed = errors.New("connection closed after a protocol error")
	// ErrQueryBufLimit is ReadBatch's error when a command outgrew
	// client-query-buffer-limit (nothing is written; Redis closes silently).
	ErrQueryBufLimit = errors.New("client reached client-query-buffer-limit")
)

// NewRequestReader wraps c; lim may be replaced by SetLimits before the
// first ReadBatch.
func NewRequestReader(c net.Conn, lim *ConnLimits) *RequestReader {
	g := &RequestReader{Conn: c, lim: lim, inBuf: make([]byte, ReadSize)}
	g.bufSize.Store(ReadSize)
	g.held.Store(ReadSize)
	return g
}

// SetLimits replaces the reader's limits. Only the owner goroutine may call
// it, between reads.
func (g *RequestReader) SetLimits(lim *ConnLimits) { g.lim = lim }

// QueryBuffered is CLIENT LIST's qbuf: the bytes read and not yet parsed,
// plus the payload received so far of an argument not read whole (Redis
// keeps that in its query buffer too). Safe from any goroutine.
func (g *RequestReader) QueryBuffered() int64 { return g.qbuf.Load() }

// PartialArgv is CLIENT LIST's argv-mem of a client between reads: the
// payload bytes of the arguments of an incomplete command already read
// whole. Safe from any goroutine.
func (g *RequestReader) PartialArgv() int64 { return g.argv.Load() }

// MemoryHeld is the capacity of the reader's buffers: the read buffer, the
// commands being assembled (an incomplete one included), the batch handed
// out and not yet given back, and the spare batch. Counting the batch being
// run keeps the figure steady while its commands run: it does not drop by a
// batch when ReadBatch hands one out and come back on Recycle (a client
// near maxmemory would otherwise see its writes refused and accepted in
// turn). Safe from any goroutine.
func (g *RequestReader) MemoryHeld() int64 { return g.held.Load() }

// publish stores the statistics other goroutines read; a value that did
// not change is not written again.
func (g *RequestReader) publish() {
	q := int64(len(g.in))
	if g.st == stBulkPayload {
		q += min(g.bulkLen, g.bulkLen+2-g.bulkLeft)
	}
	storeChanged(&g.qbuf, q)
	storeChanged(&g.argv, g.argBytes)
	storeChanged(&g.held, int64(cap(g.inBuf)+cap(g.out)+cap(g.spare)+cap(g.bigSpare)+cap(g.handed)))
}

func storeChanged(a *atomic.Int64, v int64) {
	if a.Load() != v {
		a.Store(v)
	}
}

// BufferSize is the size of the read buffer (CLIENT LIST rbs). Safe from
// any goroutine.
func (g *RequestReader) BufferSize() int64 { return g.bufSize.Load() }

// BytesRead is the total number of bytes read from the socket (INFO
// total_net_input_bytes). Safe from any goroutine.
func (g *RequestReader) BytesRead() int64 { return g.readBytes.Load() }

// Unparsed is the number of bytes read and not yet parsed, for the owner
// goroutine (or one it handed the reader to).
func (g *RequestReader) Unparsed() int { return len(g.in) }

// Ready reports whether ReadBatch has something to do without reading the
// socket: bytes read and not parsed, whole commands, or a pending error.
func (g *RequestReader) Ready() bool {
	return len(g.in) > 0 || g.complete > 0 || g.protoErr != "" || g.closeErr != nil
}

// ClearReadDeadline removes the idle-timeout deadline, if any, before
// someone else reads the socket (a blocked client's watcher).
func (g *RequestReader) ClearReadDeadline() {
	_ = g.Conn.SetReadDeadline(time.Time{})
	g.deadlined = false
}

// ReadBatch returns the canonical bytes of every complete command read so
// far (at least one), reading from the socket as needed: one socket read is
// one batch, as in Redis, except that a command with a big argument is a
// batch of its own (bigArg). The batch belongs to the caller from then on: the
// reader continues in another buffer, so arguments that alias a batch (a
// command queued by MULTI) stay valid for as long as anything refers to
// them. A caller done with a batch that nothing refers to any more hands it
// back with Recycle, and the reader alternates between two buffers.
//
// A protocol error is reported once the commands before the bad bytes have
// been handed out (and, by the caller, answered): the next call writes
// Redis's exact error line to the socket and fails.
func (g *RequestReader) ReadBatch() (batch []byte, args int, err error) {
	for {
		if g.complete > 0 {
			batch, args = g.out[:g.complete:g.complete], g.args
			g.handed = g.out[:0] // with its whole capacity, for recycle
			rest := g.out[g.complete:]
			// A big argument being read keeps the room it announced
			// (bigArg).
			need := len(rest)
			if g.st == stBulkPayload && g.bulkLen >= bigArg {
				need += int(min(g.bulkLeft, bigArgReserve))
			}
			var next []byte
			if big := g.takeBigSpare(need); big != nil {
				next = big[:len(rest)]
			} else if cap(g.spare) >= need {
				next = g.spare[:len(rest)]
			} else {
				// Size a new buffer like this batch (bounded): a one-off
				// big command does not keep its buffer.
				next = make([]byte, len(rest), max(need, min(g.complete, ReadSize), 64))
			}
			g.spare = nil
			copy(next, rest)
			g.out, g.complete, g.args = next, 0, 0
			g.publish()
			return batch, args, nil
		}
		if g.protoErr != "" {
			// As addReplyErrorFormat, CR and LF in the text become spaces
			// ("expected '$', got ' '" for an empty header line).
			line := []byte("-ERR Protocol error: " + g.protoErr)
			for i, c := range line {
				if c == '\r' || c == '\n' {
					line[i] = ' '
				}
			}
			_, _ = g.Conn.Write(append(line, '\r', '\n'))
			g.protoErr = ""
			g.closeErr = ErrProtocolClosed
		}
		if g.closeErr != nil {
			return nil, 0, g.closeErr
		}
		if len(g.in) > 0 {
			before := len(g.in)
			g.parse()
			g.publish()
			if g.complete > 0 || g.protoErr != "" || g.closeErr != nil || len(g.in) != before {
				continue
			}
		}
		if (len(g.in) > 0 || len(g.out) > 0) && g.lim.OnPartial != nil {
			g.lim.OnPartial()
		}
		read := g.fill
		if g.bigBulkPending() {
			read = g.readBulk
		}
		if err := read(); err != nil {
			return nil, 0, err
		}
	}
}

// Recycle hands back the last batch from ReadBatch, which nothing refers
// to any more: the next batch is built in its buffer instead of a new
// allocation. A big buffer (a one-off large command) is left to the
// collector.
func (g *RequestReader) Recycle() {
	if cap(g.handed) <= 4*ReadSize {
		g.spare = g.handed
	} else if cap(g.handed) <= bigSpareMax {
		g.bigSpare = g.handed
	}
	g.handed = nil
	g.publish()
}

// fill reads more input, keeping the unparsed window at the buffer's start.
func (g *RequestReader) fill() error {
	if len(g.in) > 0 && &g.in[0] != &g.inBuf[0] {
		n := copy(g.inBuf, g.in)
		g.in = g.inBuf[:n]
	} else if len(g.in) == 0 {
		g.in = g.inBuf[:0]
		if cap(g.inBuf) > 4*ReadSize {
			// A long header line grew the buffer; give the memory back.
			g.inBuf = make([]byte, ReadSize)
			g.in = g.inBuf[:0]
			g.bufSize.Store(ReadSize)
		}
	}
	if len(g.in) == len(g.inBuf) {
		// Only an incomplete header line or inline command fills the whole
		// buffer, and those are bounded by InlineMaxSize (checked in
		// parse), so this growth is bounded too.
		nb := make([]byte, 2*len(g.inBuf))
		copy(nb, g.in)
		g.inBuf = nb
		g.in = nb[:len(g.in)]
		g.bufSize.Store(int64(len(nb)))
	}
	g.armDeadline()
	n, err := g.Conn.Read(g.inBuf[len(g.in):])
	g.in = g.inBuf[:len(g.in)+n]
	g.readBytes.Add(int64(n))
	g.publish()
	if n > 0 {
		return nil
	}
	return err
}

// armDeadline sets the idle-timeout deadline before a socket read, or
// clears one that no longer applies.
func (g *RequestReader) armDeadline() {
	if t := g.lim.Shared.IdleTimeout.Load(); t > 0 && (g.lim.IdleExempt == nil || !g.lim.IdleExempt()) {
		_ = g.Conn.SetReadDeadline(time.Now().Add(time.Duration(t) * time.Second))
		g.deadlined = true
	} else if g.deadlined {
		_ = g.Conn.SetReadDeadline(time.Time{})
		g.deadlined = false
	}
}

// parse consumes as much of g.in as it can; it stops early where a batch
// must end (a command with a big argument starts or ends, see bigArg).
func (g *RequestReader) parse() {
	for len(g.in) > 0 && g.protoErr == "" && g.closeErr == nil {
		switch g.st {
		case stCommandStart:
			if g.in[0] == '*' {
				if g.canonicalCommand() {
					continue
				}
				if !g.multibulkHeader() {
					return
				}
			} else if !g.inline() {
				return
			}
		case stBulkHeader:
			if !g.bulkHeader() {
				return
			}
		case stBulkPayload:
			if !g.bulkPayload() {
				return
			}
		}
	}
}

// canonicalCommand is parse's fast path: when in starts with a whole
// command already in canonical form (plain decimal lengths, every line and
// payload ended by CRLF) within every limit, it is copied to out in one
// piece. Anything else — an incomplete command, an odd form, a limit that
// applies (authentication, proto-max-bulk-len, client-query-buffer-limit,
// big counts) — is left to the state machine, which answers it exactly as
// Redis does. It reports whether it took a command.
func (g *RequestReader) canonicalCommand() bool {
	in := g.in
	argc, i, ok := canonicalLength(in, 1)
	if !ok || argc <= 0 || argc > 1024 || (argc > 10 && g.lim.AuthRequired != nil && g.lim.AuthRequired()) {
		return false
	}
	maxBulk := g.lim.Shared.ProtoMaxBulkLen.Load()
	for range argc {
		if i >= len(in) || in[i] != '$' {
			return false
		}
		var n int64
		n, i, ok = canonicalLength(in, i+1)
		if !ok || n > maxBulk || n >= bigArg || (n > 16384 && g.lim.AuthRequired != nil && g.lim.AuthRequired()) {
			return false // a big argument's command gets a batch of its own (bigArg)
		}
		end := int64(i) + n
		if end+2 > int64(len(in)) || in[end] != '\r' || in[end+1] != '\n' {
			return false
		}
		i = int(end + 2)
	}
	if lim := g.lim.Shared.QueryBufLimit.Load(); lim > 0 && int64(i) > lim {
		return false
	}
	g.out = append(g.out, in[:i]...)
	g.in = in[i:]
	g.complete = len(g.out)
	g.args += int(argc)
	return true
}

// canonicalLength reads the decimal length that starts at b[i] (at most 18
// digits, no sign, no leading zero unless it is "0") and the CRLF after it.
// It returns the value and the index after the CRLF.
func canonicalLength(b []byte, i int) (int64, int, bool) {
	var n int64
	start := i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	digits := i - start
	if digits == 0 || digits > 18 || (digits > 1 && b[start] == '0') {
		return 0, 0, false
	}
	if i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, 0, false
	}
	return n, i + 2, true
}

// headerLine returns the line at the start of in, terminated by '\r' (the
// byte after it is skipped unchecked, as Redis does), or ok=false if it is
// not complete yet. tooBig is the error text when no terminator shows up
// within the inline limit.
func (g *RequestReader) headerLine(tooBig string) (line []byte, ok bool) {
	i := bytes.IndexByte(g.in, '\r')
	if i < 0 {
		if len(g.in) > InlineMaxSize {
			g.protoErr = tooBig
		}
		return nil, false
	}
	if i+2 > len(g.in) { // the '\n' has not arrived yet
		return nil, false
	}
	line = g.in[:i]
	g.in = g.in[i+2:]
	return line, true
}

func (g *RequestReader) multibulkHeader() bool {
	line, ok := g.headerLine("too big mbulk count string")
	if !ok {
		return false
	}
	n, ok := strconvx.ParseInt(line[1:])
	if !ok || n > protoMaxMultibulk {
		g.protoErr = "invalid multibulk length"
		return true
	}
	if n > 10 && g.lim.AuthRequired != nil && g.lim.AuthRequired() {
		g.protoErr = "unauthenticated multibulk length"
		return true
	}
	if n <= 0 {
		return true // an empty command: Redis ignores it
	}
	g.argsLeft = int(n)
	g.cmdArgs = int(n)
	g.bigCmd = false
	g.argBytes = 0
	g.cmdBytes = int64(len(line) + 2)
	g.out = append(g.out, '*')
	g.out = strconv.AppendInt(g.out, n, 10)
	g.out = append(g.out, '\r', '\n')
	g.st = stBulkHeader
	return true
}

func (g *RequestReader) bulkHeader() bool {
	// Redis checks the '$' only once the whole line is there.
	line, ok := g.headerLine("too big bulk count string")
	if !ok {
		return false
	}
	if len(line) == 0 || line[0] != '$' {
		c := byte('\r')
		if len(line) > 0 {
			c = line[0]
		}
		g.protoErr = "expected '$', got '" + string(c) + "'"
		return true
	}
	n, ok := strconvx.ParseInt(line[1:])
	if !ok || n < 0 || n > g.lim.Shared.ProtoMaxBulkLen.Load() {
		g.protoErr = "invalid bulk length"
		return true
	}
	if n > 16384 && g.lim.AuthRequired != nil && g.lim.AuthRequired() {
		g.protoErr = "unauthenticated bulk length"
		return true
	}
	g.cmdBytes += int64(len(line)+2) + n + 2
	if lim := g.lim.Shared.QueryBufLimit.Load(); lim > 0 && g.cmdBytes > lim {
		g.closeErr = ErrQueryBufLimit
		return true
	}
	g.out = append(g.out, '$')
	g.out = strconv.AppendInt(g.out, n, 10)
	g.out = append(g.out, '\r', '\n')
	g.bulkLen = n
	g.bulkLeft = n + 2
	g.st = stBulkPayload
	if n >= bigArg {
		g.bigCmd = true
		if g.complete > 0 {
			// Hand out the whole commands before this one first; the
			// next buffer gets the announced room (ReadBatch).
			return false
		}
		g.reserveBulk(min(g.bulkLeft, bigArgReserve))
	}
	return true
}

// bulkPayload takes the payload bytes of the argument being read; it
// reports false when parse must stop: a command with a big argument is
// complete and ends the batch.
func (g *RequestReader) bulkPayload() bool {
	n := int64(len(g.in))
	if n > g.bulkLeft {
		n = g.bulkLeft
	}
	data := g.bulkLeft - 2 // payload bytes still owed, without the CRLF
	if data > 0 {
		k := min(n, data)
		if g.bulkLen >= bigArg {
			g.reserveBulk(k)
		}
		g.out = append(g.out, g.in[:k]...)
	}
	// The two bytes after the payload are skipped whatever they are (Redis
	// does not check them); the canonical form gets a real CRLF. Of the
	// n bytes taken now, those from index data on are terminator bytes.
	for i := max(data, 0); i < n; i++ {
		g.out = append(g.out, "\r\n"[2-(g.bulkLeft-i)])
	}
	g.in = g.in[n:]
	g.bulkLeft -= n
	if g.bulkLeft == 0 {
		g.argsLeft--
		g.argBytes += g.bulkLen
		if g.argsLeft == 0 {
			g.st = stCommandStart
			g.cmdBytes = 0
			g.argBytes = 0
			g.complete = len(g.out)
			g.args += g.cmdArgs
			if g.bigCmd {
				g.bigCmd = false
				return false
			}
		} else {
			g.st = stBulkHeader
		}
	}
	return true
}

// inline parses one inline command line (telnet style).
func (g *RequestReader) inline() bool {
	i := bytes.IndexByte(g.in, '\n')
	if i < 0 {
		if len(g.in) > InlineMaxSize {
			g.protoErr = "too big inline request"
		}
		return false
	}
	line := g.in[:i]
	g.in = g.in[i+1:]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := splitInline(line)
	if !ok {
		g.protoErr = "unbalanced quotes in request"
		return true
	}
	if len(args) == 0 {
		return true
	}
	g.out = append(g.out, '*')
	g.out = strconv.AppendInt(g.out, int64(len(args)), 10)
	g.out = append(g.out, '\r', '\n')
	for _, a := range args {
		g.out = append(g.out, '$')
		g.out = strconv.AppendInt(g.out, int64(len(a)), 10)
		g.out = append(g.out, '\r', '\n')
		g.out = append(g.out, a...)
		g.out = append(g.out, '\r', '\n')
	}
	g.complete = len(g.out)
	g.args += len(args)
	return true
}

// splitInline splits an inline command line with Redis's sdssplitargs
// rules (config.SplitArgs implements them for redis.conf lines too).
func splitInline(line []byte) ([][]byte, bool) {
	words, ok := config.SplitArgs(string(line))
	if !ok {
		return nil, false
	}
	args := make([][]byte, len(words))
	for i, w := range words {
		args[i] = []byte(w)
	}
	return args, true
}

// InjectInput appends bytes read on the reader's behalf (by a watcher that
// read the socket while the owner waited) to the unparsed input. The owner
// goroutine calls it once it owns the reader again.
func (g *RequestReader) InjectInput(p []byte) {
	if len(p) == 0 {
		return
	}
	need := len(g.in) + len(p)
	if need > len(g.inBuf) {
		nb := make([]byte, max(need, 2*len(g.inBuf)))
		n := copy(nb, g.in)
		copy(nb[n:], p)
		g.inBuf = nb
		g.in = nb[:need]
		g.bufSize.Store(int64(len(nb)))
	} else {
		n := copy(g.inBuf, g.in) // copy handles the overlap
		copy(g.inBuf[n:], p)
		g.in = g.inBuf[:need]
	}
	g.readBytes.Add(int64(len(p)))
	g.publish()
}
