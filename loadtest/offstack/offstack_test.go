package offstack

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
)

// TestRun: f runs, its writes are seen after Run, and callers in parallel
// each get their own function's result.
func TestRun(t *testing.T) {
	var wg sync.WaitGroup
	var bad atomic.Int32
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r Runner
			for k := range 100 {
				var got int
				r.Run(func() { got = i*1000 + k })
				if got != i*1000+k {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, bad.Load())
	x := 0
	Run(func() { x = 7 })
	assert.Equal(t, 7, x)
}

// TestRunner_AllocatesNothing: with an idle worker and a function made
// once, Run allocates nothing on its caller.
func TestRunner_AllocatesNothing(t *testing.T) {
	var r Runner
	n := 0
	f := func() { n++ }
	r.Run(f) // the first call makes the Runner's channel and a worker
	allocs := testing.AllocsPerRun(1000, func() { r.Run(f) })
	assert.Zero(t, allocs)
	assert.Equal(t, 1002, n)
}

// TestRunner_UnpooledInABubble: an unpooled Runner works inside a
// synctest bubble, before and after pooled work outside it left idle
// workers behind (a pooled worker would touch the bubble's channel from
// outside it, which is fatal).
func TestRunner_UnpooledInABubble(t *testing.T) {
	var outside Runner
	outside.Run(func() {}) // an idle pooled worker now waits
	synctest.Test(t, func(t *testing.T) {
		r := Runner{Unpooled: true}
		n := 0
		for range 3 {
			r.Run(func() { n++ })
		}
		assert.Equal(t, 3, n)
	})
}
