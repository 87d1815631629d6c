package sse

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A stream's events reach its ledger under its mutex: its timer is armed
// only while an expectation is pending, and the stream's and the group's
// counters add up.
func TestDelivery_TimerOnlyWhilePending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := NewGroup(Config{URL: "http://127.0.0.1:9/events"})
		require.NoError(t, err)
		s := newStream(g, nil, nil) // never started: the test plays the stream's goroutine
		arrive := func(id string) {
			s.mu.Lock()
			s.c.events.Add(1)
			v := s.dl.ArrivedLocked([]byte(id), time.Now())
			s.mu.Unlock()
			s.dl.Settle(v)
		}
		armed := func() bool {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.dl.ArmedLocked()
		}

		arrive("")
		s.Expect(2) // one met by the credit, one pending
		assert.True(t, armed())
		arrive("")
		assert.False(t, armed(), "nothing pending: timer stopped")

		s.ExpectID("a")
		assert.True(t, armed())
		arrive("a")
		assert.False(t, armed())
		s.mu.Lock()
		counts, ids := s.dl.PendingLocked()
		s.mu.Unlock()
		assert.Zero(t, counts)
		assert.Zero(t, ids, "no stale id entries kept")

		s.Expect(1)
		assert.True(t, armed())
		time.Sleep(DefaultDeliveryTimeout)
		synctest.Wait()
		assert.False(t, armed(), "judged: nothing pending")

		want := Stats{Expected: 4, Delivered: 3, Missing: 1, Overdue: 1, Events: 3, Clock: DefaultClockName}
		assert.Equal(t, want, s.Stats())
		want.Events = 0 // the test counted the events on the stream only
		assert.Equal(t, want, g.Stats(), "the group's counters sum its streams'")
	})
}
