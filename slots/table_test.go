package slots

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBitmapRanges(t *testing.T) {
	var b Bitmap
	require.True(t, b.IsEmpty())
	require.Equal(t, "", b.String())
	b.SetRange(0, 5460)
	b.Set(10923)
	b.SetRange(63, 64) // inside the first run already
	b.SetRange(16000, 16383)
	require.Equal(t, "0-5460 10923 16000-16383", b.String())
	require.Equal(t, 5461+1+384, b.Count())
	require.Equal(t, []Range{{0, 5460}, {10923, 10923}, {16000, 16383}}, b.Ranges())
	require.True(t, b.Has(16383))
	require.False(t, b.Has(16384))
	require.False(t, b.Set(-1))
	require.True(t, b.Clear(10923))
	require.False(t, b.Clear(10923))
	var all Bitmap
	all.SetRange(0, Count-1)
	require.Equal(t, "0-16383", all.String())
	var n int
	all.Each(func(int) { n++ })
	require.Equal(t, Count, n)
	// Runs crossing word boundaries and single bits.
	var x Bitmap
	for _, s := range []int{1, 3, 62, 63, 64, 65, 127, 128, 200} {
		x.Set(s)
	}
	require.Equal(t, "1 3 62-65 127-128 200", x.String())
}

func TestParseSlot(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "16383": 16383, "5": 5} {
		v, err := ParseSlot([]byte(in))
		require.NoError(t, err)
		require.Equal(t, want, v)
	}
	for _, in := range []string{"", "-1", "16384", "05", "+5", " 5", "5 ", "x", "-0", "99999999999999999999999"} {
		_, err := ParseSlot([]byte(in))
		require.ErrorIs(t, err, ErrInvalidSlot, in)
	}
}

func TestTableCopyOnWrite(t *testing.T) {
	a := Node{ID: "a", IP: "127.0.0.1", Port: 7000}
	b := Node{ID: "b", IP: "127.0.0.1", Port: 7001}
	t0 := NewTable()
	t1 := t0.WithOwner(5, a)
	t2 := t1.WithOwner(6, b).WithMigrating(5, "b").WithImporting(7, "a")
	require.Nil(t, t0.Owner(5))
	require.Equal(t, "a", t1.OwnerID(5))
	require.Equal(t, "", t1.Migrating(5))
	require.Equal(t, "b", t2.Migrating(5))
	require.Equal(t, "a", t2.Importing(7))
	require.Equal(t, 2, t2.Assigned())
	t3 := t2.WithoutOwner(5)
	require.Equal(t, "a", t2.OwnerID(5))
	require.Equal(t, "", t3.OwnerID(5))
	require.Len(t, t3.Nodes(), 1, "owners without slots are dropped")
	s := t2.SlotsOf("b")
	require.Equal(t, "6", s.String())
	require.False(t, t1.Equal(t2))
	require.True(t, t2.Equal(t2.WithState("", "", false, 99)))
	var nilT *Table
	require.Nil(t, nilT.Owner(1))
	require.True(t, nilT.Equal(NewTable()))

	bl := NewBuilder()
	var set Bitmap
	set.SetRange(0, 100)
	bl.Assign(&set, a)
	bl.AssignSlot(200, b)
	bt := bl.Build("a", "", true, 1)
	require.Equal(t, "a", bt.OwnerID(100))
	require.Equal(t, "b", bt.OwnerID(200))
	require.True(t, bt.OK)
}

func TestRefConcurrentReaders(t *testing.T) {
	r := NewRef(nil)
	require.NotNil(t, r.Load())
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					tb := r.Load()
					_ = tb.OwnerID(5)
				}
			}
		}()
	}
	cur := r.Load()
	for i := 0; i < 200; i++ {
		cur = cur.WithOwner(i, Node{ID: "n"})
		r.Store(cur)
	}
	close(stop)
	wg.Wait()
	require.Equal(t, 200, r.Load().Assigned())
}
