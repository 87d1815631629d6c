package server

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestInflightWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newInflight()
		assert.NoError(t, f.wait(t.Context()), "idle at start")
		f.begin()
		f.begin()
		assert.EqualValues(t, 2, f.count())
		go func() {
			time.Sleep(time.Second)
			f.end()
			time.Sleep(time.Second)
			f.end()
		}()
		start := time.Now()
		assert.NoError(t, f.wait(t.Context()))
		assert.Equal(t, 2*time.Second, time.Since(start), "waits for the last request")

		f.begin()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		assert.ErrorIs(t, f.wait(ctx), context.DeadlineExceeded)
		f.end()
	})
}
