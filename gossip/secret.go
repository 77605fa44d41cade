package gossip

import (
	"bytes"
	"crypto/sha256"
	"errors"

	"github.com/hashicorp/memberlist"
	"go.uber.org/zap"
)

// The cluster bus secret (cluster-bus-secret) turns on memberlist's
// keyring: every packet and stream between bus ports is sealed with
// AES-GCM (memberlist's encryptPayload: a random nonce per message, the
// GCM tag authenticates it), and with GossipVerifyIncoming/Outgoing a node
// neither sends nor accepts anything in the clear. A peer without a key of
// the keyring cannot join the membership, and a message it forges (a FAIL,
// an UPDATE, a vote naming a real node as its sender) is dropped by
// memberlist before shoal decodes it.
//
// Secrets are strings; each gives one AES-256 key, SecretKey. Several
// secrets rotate without downtime: the first encrypts, every one decrypts.

// secretKeyDomain separates the bus key from any other use of the same
// secret (a password reused elsewhere does not give the same key).
const secretKeyDomain = "shoal cluster-bus-secret v1\x00"

// SecretKey derives the 32-byte AES-256 keyring key of one secret:
// SHA-256(secretKeyDomain || secret). The secret must carry the entropy
// (cluster-bus-secret refuses fewer than 16 characters; `openssl rand -hex
// 32` is a good one): a captured packet lets an attacker test guesses
// offline.
func SecretKey(secret string) []byte {
	h := sha256.New()
	h.Write([]byte(secretKeyDomain))
	h.Write([]byte(secret))
	return h.Sum(nil)
}

// ErrSecretOnOff refuses turning the secret on or off on a running bus.
var ErrSecretOnOff = errors.New("cluster-bus-secret can't be turned on or off while the cluster bus runs " +
	"(nodes with and without it can't talk to each other): set it in the config file of every node and " +
	"restart them; a running node can only rotate it (\"OLD NEW\", \"NEW OLD\", \"NEW\")")

// applySecrets gives memberlist's configuration the keyring of the
// configured secrets (none: no encryption). Called by Start before
// memberlist.Create; the keyring is kept for SetSecrets.
func (b *Bus) applySecrets(mc *memberlist.Config) error {
	b.secretMu.Lock()
	defer b.secretMu.Unlock()
	if len(b.cfg.Secrets) == 0 {
		return nil
	}
	keys := make([][]byte, len(b.cfg.Secrets))
	for i, s := range b.cfg.Secrets {
		keys[i] = SecretKey(s)
	}
	kr, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		return err
	}
	b.keyring = kr
	mc.Keyring = kr
	// memberlist's defaults already, set here because they are the point:
	// nothing unencrypted (or sealed with an unknown key) is accepted, and
	// nothing leaves in the clear.
	mc.GossipVerifyIncoming = true
	mc.GossipVerifyOutgoing = true
	return nil
}

// SetSecrets replaces the bus secrets (CONFIG SET cluster-bus-secret): the
// first encrypts from now on, all decrypt. Before Start it only records
// them. On a running bus it rotates memberlist's keyring in place; turning
// the secret on or off is refused with ErrSecretOnOff (a node that alone
// starts or stops encrypting is cut off from every peer, and a master cut
// off for node-timeout is failed over).
func (b *Bus) SetSecrets(secrets []string) error {
	b.secretMu.Lock()
	defer b.secretMu.Unlock()
	running := b.started.Load() && !b.stopped.Load()
	if !running {
		b.cfg.Secrets = append([]string(nil), secrets...)
		return nil
	}
	if (b.keyring == nil) != (len(secrets) == 0) {
		return ErrSecretOnOff
	}
	if b.keyring == nil {
		return nil // no secret before, none now
	}
	want := make([][]byte, len(secrets))
	for i, s := range secrets {
		want[i] = SecretKey(s)
		if err := b.keyring.AddKey(want[i]); err != nil {
			return err
		}
	}
	if err := b.keyring.UseKey(want[0]); err != nil {
		return err
	}
	// Drop the keys no longer wanted, last first. memberlist's RemoveKey
	// shifts the slice that GetKeys handed to readers when the key is not
	// the last one; UseKey first makes the keyring's slice a fresh copy
	// (so the shift lands in memory no reader was given). In a rotation
	// ("NEW OLD" -> "NEW") the dropped key is the last one anyway.
	for {
		cur := b.keyring.GetKeys()
		drop := -1
		for i := len(cur) - 1; i > 0; i-- {
			if !containsKey(want, cur[i]) {
				drop = i
				break
			}
		}
		if drop < 0 {
			break
		}
		if drop != len(cur)-1 {
			if err := b.keyring.UseKey(want[0]); err != nil {
				return err
			}
		}
		if err := b.keyring.RemoveKey(cur[drop]); err != nil {
			return err
		}
	}
	b.cfg.Secrets = append([]string(nil), secrets...)
	b.log.Info("cluster bus secrets changed", zap.Int("secrets", len(secrets)))
	return nil
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}

// Encrypted reports whether the bus seals its traffic (a secret is set).
func (b *Bus) Encrypted() bool {
	b.secretMu.Lock()
	defer b.secretMu.Unlock()
	if b.started.Load() {
		return b.keyring != nil
	}
	return len(b.cfg.Secrets) > 0
}
