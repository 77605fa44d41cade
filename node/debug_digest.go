package node

import (
	"crypto/sha1"
	"encoding/binary"

	"github.com/shoal-db/shoal/store"
)

// DEBUG DIGEST and DIGEST-VALUE.

// valueDigest is Redis's 20-byte DEBUG DIGEST accumulator.
type valueDigest [20]byte

// xor adds data without regard to order: d ^= SHA1(data).
func (d *valueDigest) xor(data []byte) {
	h := sha1.Sum(data)
	for i := range d {
		d[i] ^= h[i]
	}
}

// mix adds data in order: d = SHA1(d ^ SHA1(data)).
func (d *valueDigest) mix(data []byte) {
	d.xor(data)
	*d = sha1.Sum(d[:])
}

// Mix and Xor make valueDigest a store.Digester, so value types add their
// contents the way Redis's xorObjectDigest does for each type.
func (d *valueDigest) Mix(data []byte) { d.mix(data) }

// Xor adds data without regard to order (digest ^= SHA1(data)).
func (d *valueDigest) Xor(data []byte) { d.xor(data) }

// redisTypeCode is the OBJ_* number Redis mixes into a value's digest.
func redisTypeCode(t store.Type) uint32 {
	switch t {
	case store.TypeString:
		return 0
	case store.TypeList:
		return 1
	case store.TypeSet:
		return 2
	case store.TypeZSet:
		return 3
	case store.TypeHash:
		return 4
	case store.TypeStream:
		return 6
	}
	return 5 // module
}

// objectDigest adds e's type, value and expiry to d (xorObjectDigest).
// Caller holds e's slot lock.
func objectDigest(e *store.Entry, d *valueDigest) {
	var typ [4]byte
	binary.BigEndian.PutUint32(typ[:], redisTypeCode(e.Type()))
	d.mix(typ[:])
	if e.Type() == store.TypeString {
		d.mix(e.Bytes())
	} else if v := e.Value(); v != nil {
		v.Digest(d)
	}
	if e.ExpireAt() != 0 {
		d.xor([]byte("!!expire!!"))
	}
}

// entryDigest is one key/value pair's digest: the key mixed, then the value.
func entryDigest(e *store.Entry) valueDigest {
	var d valueDigest
	d.mix([]byte(e.Key()))
	objectDigest(e, &d)
	return d
}

// keyDigest implements DEBUG DIGEST-VALUE for one key (zeros when absent).
func (c *Client) keyDigest(key []byte) valueDigest {
	unlock := lockKeySlot(c, key)
	defer unlock()
	var d valueDigest
	if e := c.DB().Lookup(key, lookupPeek); e != nil {
		objectDigest(e, &d)
	}
	return d
}

// datasetDigest implements DEBUG DIGEST: the xor of the SHA1s of every
// key/value pair's digest, each database introduced by its number, so the result does not
// depend on the order keys are visited; all zeros for an empty dataset.
func (s *Server) datasetDigest() valueDigest {
	var final valueDigest
	dbs, _, _ := s.ks.Stats()
	for _, st := range dbs {
		var id [4]byte
		binary.BigEndian.PutUint32(id[:], uint32(st.ID))
		final.mix(id[:])
		db := s.ks.DB(st.ID)
		for slot := 0; slot < store.NumSlots; slot++ {
			db.ScanSlot(uint16(slot), func(e *store.Entry) bool {
				d := entryDigest(e)
				final.xor(d[:])
				return true
			})
		}
	}
	return final
}
