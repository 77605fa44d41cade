package node

// Xor makes valueDigest a store.DigestXorer: it adds data without regard to
// order (digest ^= SHA1(data), Redis's xorDigest), which set members need
// and which store.DigestElement uses for hash pairs.
func (d *valueDigest) Xor(data []byte) { d.xor(data) }
