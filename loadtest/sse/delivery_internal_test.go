package sse

import (
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stream holds an armed timer only while an expectation is pending, and
// allocates nothing for delivery before its first expectation.
func TestDelivery_TimerOnlyWhilePending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := NewGroup(Config{URL: "http://127.0.0.1:9/events"})
		require.NoError(t, err)
		s := newStream(g, nil) // never started: the test plays the stream's goroutine
		arrive := func(id string) {
			s.mu.Lock()
			s.c.events.Add(1)
			s.matched++
			s.arrivedLocked([]byte(id), time.Now())
			s.mu.Unlock()
		}
		armed := func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.dl != nil && s.dl.armed
		}

		arrive("")
		assert.Nil(t, s.dl, "an event before any expectation allocates nothing")
		s.Expect(2) // one met by the credit, one pending
		assert.True(t, armed())
		arrive("")
		assert.False(t, armed(), "nothing pending: timer stopped")
		assert.Zero(t, s.dl.counts.len())

		s.ExpectID("a")
		assert.True(t, armed())
		arrive("a")
		assert.False(t, armed())
		assert.Zero(t, s.dl.idq.len(), "no stale id entries kept")

		s.Expect(1)
		assert.True(t, armed())
		time.Sleep(DefaultDeliveryTimeout)
		synctest.Wait()
		assert.False(t, armed(), "judged: nothing pending")

		st := s.Stats()
		assert.Equal(t, Stats{Expected: 4, Delivered: 3, Missing: 1, Overdue: 1, Events: 3, Clock: DefaultClockName}, st)
	})
}

// A pending expectation costs no more than before observations were kept
// (a time.Time and a count, 32 bytes): times on the group's clock make
// room for the observation's pointer.
func TestDelivery_ExpectationSize(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(countWant{}), uintptr(24))
	assert.LessOrEqual(t, unsafe.Sizeof(idWant{}), uintptr(24))
	assert.LessOrEqual(t, unsafe.Sizeof(idDue{}), uintptr(24))
	assert.LessOrEqual(t, unsafe.Sizeof(delivery{}), uintptr(112), "the allocation's size class")
}

func TestFIFO(t *testing.T) {
	var f fifo[int]
	for i := range 4 {
		f.push(i)
	}
	f.pop()
	f.pop()
	base := cap(f.buf)
	for i := 4; i < 6; i++ {
		f.push(i) // reuses the popped slots
	}
	var got []int
	for f.len() > 0 {
		got = append(got, *f.front())
		f.pop()
	}
	assert.Equal(t, []int{2, 3, 4, 5}, got)
	assert.Equal(t, base, cap(f.buf), "no growth for a queue that never holds more than its array")
	assert.Zero(t, f.head)
}
