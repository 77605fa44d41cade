package main

import (
	"testing"

	"github.com/shoal-db/shoal/slots"
	"github.com/stretchr/testify/require"
)

func TestWaitClusterHelpers(t *testing.T) {
	first, last, ok := firstSlotRange([]string{"[5->-abc]", "10-20", "30"})
	require.True(t, ok)
	require.Equal(t, 10, first)
	require.Equal(t, 20, last)
	first, last, ok = firstSlotRange([]string{"7"})
	require.True(t, ok)
	require.Equal(t, [2]int{7, 7}, [2]int{first, last})
	_, _, ok = firstSlotRange(nil)
	require.False(t, ok)
	k := keyInSlotRange("p:", 100, 100)
	require.Equal(t, uint16(100), slots.KeySlot([]byte(k)))
}
