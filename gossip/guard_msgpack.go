package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// This file is the bus guard's parser: it checks memberlist's wire messages
// (a type byte, then msgpack values and raw byte runs) before memberlist
// sees them. memberlist v0.6.0 trusts what a message claims: a stream's
// userMsg header makes it allocate UserMsgLen bytes (one 22-byte packet
// claiming 1 TiB killed a node), a push/pull header allocates Nodes states,
// and a node state or alive message whose Vsn holds 1 to 5 bytes makes it
// index past the end (a panic in a goroutine: the process dies). The parser
// reads every length before it takes the bytes, takes no more than a
// message's byte budget, buffers only bytes that arrived, and checks the
// header fields against shoal's own maxima.

// memberlist's message types (net.go; the numbers are its wire protocol).
const (
	mlPing         = 0
	mlIndirectPing = 1
	mlAckResp      = 2
	mlSuspect      = 3
	mlAlive        = 4
	mlDead         = 5
	mlPushPull     = 6
	mlCompound     = 7
	mlUser         = 8
	mlCompress     = 9
	mlEncrypt      = 10
	mlNackResp     = 11
	mlHasCrc       = 12
	mlErr          = 13
	mlHasLabel     = 244
)

// Limits of the guard, derived from what shoal itself sends.
const (
	// guardMaxMembers bounds a push/pull's node count: shoal's memberlist
	// membership is the cluster's nodes (Redis recommends at most 1000).
	guardMaxMembers = 4096
	// guardMaxNodeState bounds one encoded node state: a name (shoal's are
	// 18 bytes), an address, memberlist's 512-byte meta limit, 6 versions.
	guardMaxNodeState = 2048
	// guardMaxUserState is the push/pull user state: shoal's delegate sends
	// none (LocalState returns nil).
	guardMaxUserState = 0
	// guardMaxHeader bounds a stream's msgpack header or a small message
	// (ping, ack, error).
	guardMaxHeader = 4096
	// guardMaxUserMsg is a bus message: shoal refuses larger ones.
	guardMaxUserMsg = MaxMessageSize
	// guardMaxEncrypted bounds an encrypted stream message: the largest
	// plaintext (a user message) plus the cipher's overhead.
	guardMaxEncrypted = guardMaxUserMsg + guardMaxHeader
	// guardMaxDepth bounds msgpack nesting (memberlist's messages nest 2).
	guardMaxDepth = 8
	// guardMaxMapEntries bounds a struct's fields (memberlist's have ≤ 8).
	guardMaxMapEntries = 32
	// guardMaxKeyLen bounds a field name.
	guardMaxKeyLen = 64
)

var (
	errGuardTruncated = errors.New("truncated message")
	errGuardBudget    = errors.New("message larger than its limit")
	// memberlist compression is off on every node (an LZW payload is a
	// decompression bomb), and shoal sets no label.
	errGuardCompressed = errors.New("compressed message")
	errGuardLabelled   = errors.New("labelled message")
)

// msgSource hands out a message's bytes: exactly n of them, or an error.
// It refuses n beyond the message's remaining byte budget before reading.
type msgSource interface {
	take(n int) ([]byte, error)
	// grant raises the budget by n bytes (a header announced them).
	grant(n int)
}

// sliceSource reads a packet that is already in memory.
type sliceSource struct {
	b []byte
}

func (s *sliceSource) take(n int) ([]byte, error) {
	if n < 0 || n > len(s.b) {
		return nil, errGuardTruncated
	}
	p := s.b[:n]
	s.b = s.b[n:]
	return p, nil
}

func (s *sliceSource) grant(int) {}

func takeByte(src msgSource) (byte, error) {
	p, err := src.take(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}

func takeUint(src msgSource, n int) (uint64, error) {
	p, err := src.take(n)
	if err != nil {
		return 0, err
	}
	var v uint64
	for _, c := range p {
		v = v<<8 | uint64(c)
	}
	return v, nil
}

// msgpack kinds the walker tells apart.
type mpKind uint8

const (
	mpNil mpKind = iota
	mpBool
	mpUint
	mpInt // negative
	mpFloat
	mpStr // str or bin: go-msgpack decodes either into string and []byte
	mpArray
	mpMap
)

// mpHead is one value's header: its kind and, for str/array/map, its
// length (bytes or elements); for integers, the value.
type mpHead struct {
	kind mpKind
	n    uint64
}

// readHead reads a value's header. Extension types (which go-msgpack may
// hand to registered decoders) and the reserved byte 0xc1 are refused:
// memberlist never sends them.
func readHead(src msgSource) (mpHead, error) {
	c, err := takeByte(src)
	if err != nil {
		return mpHead{}, err
	}
	switch {
	case c <= 0x7f:
		return mpHead{mpUint, uint64(c)}, nil
	case c >= 0xe0:
		return mpHead{mpInt, 0}, nil
	case c <= 0x8f:
		return mpHead{mpMap, uint64(c & 0x0f)}, nil
	case c <= 0x9f:
		return mpHead{mpArray, uint64(c & 0x0f)}, nil
	case c <= 0xbf:
		return mpHead{mpStr, uint64(c & 0x1f)}, nil
	}
	var h mpHead
	size := 0
	switch c {
	case 0xc0:
		return mpHead{mpNil, 0}, nil
	case 0xc2, 0xc3:
		return mpHead{mpBool, 0}, nil
	case 0xc4, 0xd9:
		h.kind, size = mpStr, 1
	case 0xc5, 0xda:
		h.kind, size = mpStr, 2
	case 0xc6, 0xdb:
		h.kind, size = mpStr, 4
	case 0xca:
		_, err = src.take(4)
		return mpHead{mpFloat, 0}, err
	case 0xcb:
		_, err = src.take(8)
		return mpHead{mpFloat, 0}, err
	case 0xcc, 0xcd, 0xce, 0xcf:
		h.n, err = takeUint(src, 1<<(c-0xcc))
		return mpHead{mpUint, h.n}, err
	case 0xd0, 0xd1, 0xd2, 0xd3:
		v, err := takeUint(src, 1<<(c-0xd0))
		bits := uint(8) << (c - 0xd0)
		if err == nil && v>>(bits-1) == 0 { // not negative: a uint
			return mpHead{mpUint, v}, nil
		}
		return mpHead{mpInt, 0}, err
	case 0xdc:
		h.kind, size = mpArray, 2
	case 0xdd:
		h.kind, size = mpArray, 4
	case 0xde:
		h.kind, size = mpMap, 2
	case 0xdf:
		h.kind, size = mpMap, 4
	default:
		return mpHead{}, fmt.Errorf("msgpack type 0x%02x not accepted", c)
	}
	h.n, err = takeUint(src, size)
	return h, err
}

// skipValue walks one value of any kind; every length is checked by the
// source against the bytes left before anything is taken.
func skipValue(src msgSource, depth int) error {
	h, err := readHead(src)
	if err != nil {
		return err
	}
	return skipBody(src, h, depth)
}

func skipBody(src msgSource, h mpHead, depth int) error {
	switch h.kind {
	case mpStr:
		if h.n > uint64(guardMaxEncrypted) {
			return errGuardBudget
		}
		_, err := src.take(int(h.n))
		return err
	case mpArray, mpMap:
		if depth >= guardMaxDepth {
			return errors.New("msgpack nested too deep")
		}
		n := h.n
		if h.kind == mpMap {
			n *= 2
		}
		// Each element takes at least one byte, and the source refuses
		// the first one past the budget: a huge count costs nothing.
		for i := uint64(0); i < n; i++ {
			if err := skipValue(src, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// fieldRule says how a struct field is checked.
type fieldRule uint8

const (
	ruleLen fieldRule = iota + 1 // a length or count: an integer in [0, max], kept
	ruleVsn                      // memberlist's 6 protocol versions: absent, empty or exactly 6
)

type fieldSpec struct {
	name string
	rule fieldRule
	max  uint64
}

var (
	userMsgHeaderFields  = []fieldSpec{{name: "UserMsgLen", rule: ruleLen, max: guardMaxUserMsg}}
	pushPullHeaderFields = []fieldSpec{
		{name: "Nodes", rule: ruleLen, max: guardMaxMembers},
		{name: "UserStateLen", rule: ruleLen, max: guardMaxUserState},
	}
	versionedFields = []fieldSpec{{name: "Vsn", rule: ruleVsn}} // alive, pushNodeState
)

// walkStruct walks one msgpack map (memberlist encodes every struct as a
// map keyed by field name), applies specs to the fields they name and
// returns the ruleLen values in specs' order (0 when absent). go-msgpack
// keeps the last of repeated keys: a field named twice (in any letter
// case) is refused so that the value checked is the value used.
func walkStruct(src msgSource, specs []fieldSpec) ([]uint64, error) {
	h, err := readHead(src)
	if err != nil {
		return nil, err
	}
	if h.kind != mpMap {
		return nil, errors.New("expected a msgpack map")
	}
	if h.n > guardMaxMapEntries {
		return nil, errors.New("too many fields")
	}
	vals := make([]uint64, len(specs))
	var seen uint32
	for i := uint64(0); i < h.n; i++ {
		kh, err := readHead(src)
		if err != nil {
			return nil, err
		}
		if kh.kind != mpStr || kh.n > guardMaxKeyLen {
			return nil, errors.New("bad field name")
		}
		key, err := src.take(int(kh.n))
		if err != nil {
			return nil, err
		}
		spec := -1
		for j := range specs {
			if strings.EqualFold(string(key), specs[j].name) {
				spec = j
				break
			}
		}
		if spec < 0 {
			if err := skipValue(src, 1); err != nil {
				return nil, err
			}
			continue
		}
		if seen&(1<<spec) != 0 {
			return nil, fmt.Errorf("field %s repeated", specs[spec].name)
		}
		seen |= 1 << spec
		vh, err := readHead(src)
		if err != nil {
			return nil, err
		}
		switch specs[spec].rule {
		case ruleLen:
			if vh.kind != mpUint || vh.n > specs[spec].max {
				return nil, fmt.Errorf("%s out of range (limit %d)", specs[spec].name, specs[spec].max)
			}
			vals[spec] = vh.n
		case ruleVsn:
			switch vh.kind {
			case mpNil:
			case mpStr, mpArray:
				if vh.n != 0 && vh.n != 6 {
					return nil, errors.New("protocol versions must be 6")
				}
				if vh.kind == mpArray {
					// go-msgpack fills []uint8 from an array of
					// integers; anything else fails its decode.
					for k := uint64(0); k < vh.n; k++ {
						eh, err := readHead(src)
						if err != nil {
							return nil, err
						}
						if eh.kind != mpUint || eh.n > 0xff {
							return nil, errors.New("bad protocol version")
						}
					}
					continue
				}
				if _, err := src.take(int(vh.n)); err != nil {
					return nil, err
				}
			default:
				return nil, errors.New("bad protocol versions")
			}
		}
	}
	return vals, nil
}

// validateStreamMessage reads one memberlist stream message from src and
// checks it. encrypted says whether a keyring is configured: only then is
// an encrypted message (authenticated by memberlist itself, which reads
// its 4-byte length against its own 20 MB cap) let through unread.
func validateStreamMessage(src msgSource, encrypted bool) error {
	t, err := takeByte(src)
	if err != nil {
		return err
	}
	src.grant(guardMaxHeader)
	switch t {
	case mlPing, mlAckResp, mlErr:
		_, err = walkStruct(src, nil)
		return err
	case mlUser:
		v, err := walkStruct(src, userMsgHeaderFields)
		if err != nil {
			return err
		}
		src.grant(int(v[0]))
		body, err := src.take(int(v[0]))
		if err != nil {
			return err
		}
		return checkBusMessage(body)
	case mlPushPull:
		v, err := walkStruct(src, pushPullHeaderFields)
		if err != nil {
			return err
		}
		nodes, userState := int(v[0]), int(v[1])
		src.grant(nodes*guardMaxNodeState + userState)
		for i := 0; i < nodes; i++ {
			if _, err := walkStruct(src, versionedFields); err != nil {
				return err
			}
		}
		_, err = src.take(userState)
		return err
	case mlEncrypt:
		if !encrypted {
			return errors.New("encrypted message but no cluster secret is set")
		}
		n, err := takeUint(src, 4)
		if err != nil {
			return err
		}
		if n > guardMaxEncrypted {
			return errGuardBudget
		}
		src.grant(int(n))
		_, err = src.take(int(n))
		return err
	case mlCompress:
		return errGuardCompressed
	case mlHasLabel:
		return errGuardLabelled
	}
	return fmt.Errorf("stream message type %d not accepted", t)
}

// checkBusMessage checks a shoal bus message carried as memberlist's user
// message, so that a malformed one is dropped here, where the peer's
// address is known (the Bus decodes it again: memberlist sits between).
func checkBusMessage(body []byte) error {
	var m Message // on the stack: only the verdict is kept
	return decode(&m, body, reader{check: true})
}

// validatePacket checks one plaintext UDP packet: an optional CRC header,
// then one command (a compound of commands at most one level deep).
func validatePacket(buf []byte) error {
	if len(buf) >= 1 && buf[0] == mlHasCrc {
		// memberlist checks the CRC itself.
		if len(buf) < 5 {
			return errGuardTruncated
		}
		buf = buf[5:]
	}
	return validateCommand(buf, true)
}

func validateCommand(buf []byte, top bool) error {
	if len(buf) == 0 {
		return errors.New("empty packet")
	}
	t, body := buf[0], buf[1:]
	switch t {
	case mlPing, mlIndirectPing, mlAckResp, mlNackResp, mlSuspect, mlDead, mlAlive:
		specs := []fieldSpec(nil)
		if t == mlAlive {
			specs = versionedFields
		}
		src := &sliceSource{b: body}
		if _, err := walkStruct(src, specs); err != nil {
			return err
		}
		if len(src.b) != 0 {
			return errors.New("trailing bytes after the message")
		}
		return nil
	case mlUser:
		return checkBusMessage(body)
	case mlCompound:
		if !top {
			return errors.New("nested compound message")
		}
		if len(body) < 1 {
			return errGuardTruncated
		}
		n := int(body[0])
		body = body[1:]
		if len(body) < 2*n {
			return errGuardTruncated
		}
		lens := body[:2*n]
		body = body[2*n:]
		for i := 0; i < n; i++ {
			l := int(binary.BigEndian.Uint16(lens[2*i:]))
			if l > len(body) {
				return errGuardTruncated
			}
			if err := validateCommand(body[:l], false); err != nil {
				return err
			}
			body = body[l:]
		}
		if len(body) != 0 {
			return errors.New("trailing bytes after the compound message")
		}
		return nil
	case mlCompress:
		return errGuardCompressed
	case mlHasLabel:
		return errGuardLabelled
	}
	return fmt.Errorf("packet type %d not accepted", t)
}
