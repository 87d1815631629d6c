package delivery

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// owner records a ledger's samples.
type owner struct {
	mu  sync.Mutex
	out []loadtest.Response
	lat []time.Duration
}

func (o *owner) Record(kind string, d time.Duration, r loadtest.Response) {
	o.out = append(o.out, r)
	o.lat = append(o.lat, d)
}

func (o *owner) State() string { return "held" }

func newLedger(timeout time.Duration, total *Counters) (*Ledger, *owner) {
	o := &owner{}
	l := &Ledger{}
	r := &Rules{Kind: "k", Timeout: timeout, Now: time.Now, Epoch: time.Now(), Prefix: "test", Noun: "event", Total: total}
	l.Init(r, &o.mu, o, &Counters{}, nil)
	return l, o
}

func (l *Ledger) arrive(id string) {
	l.mu.Lock()
	v := l.ArrivedLocked([]byte(id), l.rules.Now())
	l.mu.Unlock()
	l.Settle(v)
}

// A ledger allocates nothing before its first expectation, arms its timer
// only while one is pending, and judges each expectation once: delivered,
// credited, overdue, or left pending when the stream leaves.
func TestLedger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		total := &Counters{}
		l, o := newLedger(time.Second, total)
		l.arrive("")
		assert.Nil(t, l.b, "a message before any expectation allocates nothing")
		l.Expect(2) // one met by the credit, one pending
		assert.True(t, l.ArmedLocked())
		time.Sleep(300 * time.Millisecond)
		l.arrive("")
		assert.False(t, l.ArmedLocked(), "nothing pending: timer stopped")
		require.Len(t, o.out, 2)
		assert.Equal(t, []time.Duration{0, 300 * time.Millisecond}, o.lat)

		l.ExpectID("a")
		l.arrive("b") // not the id: credit for the next Expect
		l.arrive("a")
		counts, ids := l.PendingLocked()
		assert.Zero(t, counts+ids, "no stale id entries kept")
		l.Expect(1) // met by b at once

		l.Expect(3)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.False(t, l.ArmedLocked(), "judged: nothing pending")
		last := o.out[len(o.out)-1]
		assert.Equal(t, loadtest.AppError, last.Outcome)
		assert.Contains(t, last.Err.Error(), "test: 3 events expected 1s ago")
		assert.Contains(t, last.Err.Error(), "have not arrived; held, 4 delivered, 3 missing")

		l.Expect(1)
		l.Leave()
		l.Expect(1) // after Leave: counted, never judged
		time.Sleep(2 * time.Second)
		synctest.Wait()
		e, d, m, od := l.c.Load()
		assert.Equal(t, [4]int64{9, 4, 5, 3}, [4]int64{e, d, m, od})
		e, d, m, od = total.Load()
		assert.Equal(t, [4]int64{9, 4, 5, 3}, [4]int64{e, d, m, od}, "the rules' total sums the ledgers'")
		assert.Len(t, o.out, 7, "4 delivered + 3 overdue, none for the 2 left pending")
	})
}

// With the deadline off nothing is judged until JudgeAllLocked; with
// TrackIDs an id seen before ExpectID counts, and its message is credit
// for an Expect too (an id matches at arrival only if it is pending).
func TestLedgerWithoutDeadline(t *testing.T) {
	l, o := newLedger(-1, nil)
	l.rules.TrackIDs = true
	l.arrive("x")
	l.ExpectID("x")
	l.Expect(1)
	l.ExpectID("y")
	l.Expect(1)
	l.mu.Lock()
	assert.False(t, l.ArmedLocked())
	vs := l.JudgeAllLocked()
	l.mu.Unlock()
	for _, v := range vs {
		l.Settle(v)
	}
	require.Len(t, o.out, 4)
	assert.Equal(t, loadtest.OK, o.out[0].Outcome)
	assert.Equal(t, loadtest.OK, o.out[1].Outcome)
	var errs []string
	for _, r := range o.out[2:] {
		require.Equal(t, loadtest.AppError, r.Outcome)
		errs = append(errs, r.Err.Error())
	}
	assert.Contains(t, strings.Join(errs, "\n"), `test: event id "y" expected`)
	assert.Contains(t, strings.Join(errs, "\n"), "test: an event expected")
}

// A pending expectation costs no more than before observations were kept
// (a time.Time and a count, 32 bytes): times on the rules' clock make room
// for the observation's pointer.
func TestExpectationSize(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(countWant{}), uintptr(24))
	assert.LessOrEqual(t, unsafe.Sizeof(idWant{}), uintptr(24))
	assert.LessOrEqual(t, unsafe.Sizeof(idDue{}), uintptr(24))
	assert.LessOrEqual(t, unsafe.Sizeof(book{}), uintptr(112), "the allocation's size class")
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
