package store

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// A slot table of up to dictInlineBuckets buckets lives in the dict; it
// moves out as it grows and back as it shrinks, keeping every entry, and
// leaves no stale pointer inline (it would keep a deleted entry alive).
func TestDictInlineTableMovesOutAndBack(t *testing.T) {
	seed := New(1, nil, nil).seed
	var d dict
	var entries []*Entry
	check := func() {
		t.Helper()
		inline := len(d.buckets) > 0 && &d.buckets[0] == &d.inline[0]
		require.Equal(t, len(d.buckets) > 0 && len(d.buckets) <= dictInlineBuckets, inline, "table of %d buckets", len(d.buckets))
		if !inline {
			require.Equal(t, [dictInlineBuckets]*Entry{}, d.inline, "a stale pointer inline")
		}
		for _, e := range entries {
			k := []byte(e.key)
			require.Same(t, e, d.find(hashKey(seed, k), k))
		}
	}
	for i := range 40 {
		e := allocEntry([]byte("key:"+strconv.Itoa(i)), cacheValue)
		k := []byte(e.key)
		d.insert(seed, hashKey(seed, k), e)
		entries = append(entries, e)
		check()
	}
	for len(entries) > 0 {
		e := entries[len(entries)-1]
		entries = entries[:len(entries)-1]
		k := []byte(e.key)
		d.removeEntry(seed, hashKey(seed, k), e)
		check()
	}
	require.Nil(t, d.buckets)
	require.Equal(t, [dictInlineBuckets]*Entry{}, d.inline)
	for i := range 5 {
		k := []byte("key:" + strconv.Itoa(i))
		d.insert(seed, hashKey(seed, k), allocEntry(k, cacheValue))
	}
	d.clear()
	require.Equal(t, [dictInlineBuckets]*Entry{}, d.inline, "clear leaves entries reachable")
}
