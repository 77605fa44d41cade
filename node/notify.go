package node

import (
	"sync/atomic"

	"github.com/shoal-db/shoal/config"
	"github.com/shoal-db/shoal/store"
)

// Keyspace notifications (Redis 7.0's notify.c).
//
// An event is a class (config.Notify*: g $ l s h z x e t m n), a name
// ("set", "lpush", "expired"...), a key and its database. When the class is
// enabled by notify-keyspace-events it is published, on this node only (as
// Redis: notifications never cross the cluster bus), to
// __keyspace@<db>__:<key> with the event name as the message when K is set,
// and to __keyevent@<db>__:<event> with the key as the message when E is set.
// Publishing goes through the ordinary Pub/Sub delivery (node/pubsub.go), so
// RESP2 and RESP3 subscribers get the same frames as for PUBLISH.
//
// Events are raised where Redis raises them: command handlers through
// command.Ctx.Notify, right after their change and under the key's slot
// lock, so the events of one key reach subscribers in the order of its
// changes, and those of a transaction or script in command order; the
// keyspace itself raises "new" (a key is added), "keymiss" (a read lookup
// misses) and "expired" (lazy and active expiry) through store.Events;
// eviction raises "evicted" (node/maxmemory.go keyEvicted). While the
// dataset is being loaded (an RDB file, a replica's full sync) no "new" is
// raised, as Redis's dbAddRDBLoad raises none.
//
// The enabled classes live in one atomic, stored when the directive
// changes: an event site costs one atomic load when its class is off.

// keyspaceNotify is the server's notification state.
type keyspaceNotify struct {
	flags atomic.Int64 // notify-keyspace-events, parsed (config.Notify*)
	// bulkLoads counts the dataset loads under way (RDB file, full sync),
	// during which keys are added without a "new" event.
	bulkLoads atomic.Int32
}

// registerNotifyHooks reads notify-keyspace-events now and on every change.
func (s *Server) registerNotifyHooks() {
	s.notify.flags.Store(s.cfg.Int("notify-keyspace-events"))
	s.cfg.OnChange("notify-keyspace-events", func(string) error {
		s.notify.flags.Store(s.cfg.Int("notify-keyspace-events"))
		return nil
	})
}

// quietLoad marks a dataset load under way until the returned function is
// called: keys it adds raise no "new" event.
func (s *Server) quietLoad() (done func()) {
	s.notify.bulkLoads.Add(1)
	return func() { s.notify.bulkLoads.Add(-1) }
}

// notifyEnabled reports whether events of class are published.
func (s *Server) notifyEnabled(class int64) bool {
	return s.notify.flags.Load()&class != 0
}

// notifyKeyspaceEvent publishes the event of class named event for key in
// database db, if the class is enabled (Redis's notifyKeyspaceEvent).
func (s *Server) notifyKeyspaceEvent(from *Client, class int64, event string, key []byte, db int) {
	flags := s.notify.flags.Load()
	if flags&class == 0 {
		return
	}
	var buf [128]byte
	// Both messages under one hold of the registry lock, sent together: a
	// subscriber of both gets them with one append to its queue.
	var d pubsubDeliveries
	s.pubsub.mu.RLock()
	if flags&config.NotifyKeyspace != 0 {
		ch := appendNotifyChannel(buf[:0], "__keyspace@", db)
		ch = append(ch, key...)
		s.publishLocked(&d, from, ch, []byte(event), false)
	}
	if flags&config.NotifyKeyevent != 0 {
		ch := appendNotifyChannel(buf[:0], "__keyevent@", db)
		ch = append(ch, event...)
		s.publishLocked(&d, from, ch, key, false)
	}
	d.send(s)
	s.pubsub.mu.RUnlock()
}

// appendNotifyChannel appends "<prefix><db>__:".
func appendNotifyChannel(b []byte, prefix string, db int) []byte {
	b = append(b, prefix...)
	b = appendCount(b, db)
	return append(b, "__:"...)
}

// NotifyKeyspaceEvent is the command.Session side of command.Ctx.Notify.
func (c *Client) NotifyKeyspaceEvent(class int64, event string, key []byte, db *store.DB) {
	if c.srv.notifyEnabled(class) {
		c.srv.notifyKeyspaceEvent(c, class, event, key, db.ID())
	}
}

// KeyAdded raises "new" (store.Events; Redis's dbAdd).
func (e *expiryEvents) KeyAdded(db *store.DB, key []byte) {
	s := (*Server)(e)
	if s.notifyEnabled(config.NotifyNew) && s.notify.bulkLoads.Load() == 0 {
		s.notifyKeyspaceEvent(nil, config.NotifyNew, "new", key, db.ID())
	}
}

// KeyMissed raises "keymiss" (store.Events; Redis's lookupKey for reading).
func (e *expiryEvents) KeyMissed(db *store.DB, key []byte) {
	if s := (*Server)(e); s.notifyEnabled(config.NotifyKeyMiss) {
		s.notifyKeyspaceEvent(nil, config.NotifyKeyMiss, "keymiss", key, db.ID())
	}
}

// notifyExpired raises "expired" for a key the keyspace expired.
func (s *Server) notifyExpired(db int, key string) {
	if s.notifyEnabled(config.NotifyExpired) {
		s.notifyKeyspaceEvent(nil, config.NotifyExpired, "expired", []byte(key), db)
	}
}
