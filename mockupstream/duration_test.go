package mockupstream_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestDuration_JSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{`"1.2s"`, 1200 * time.Millisecond, true}, // Go duration string
		{`"250ms"`, 250 * time.Millisecond, true}, // another unit
		{`1500`, 1500 * time.Millisecond, true},   // a number is milliseconds
		{`0.25`, 250 * time.Microsecond, true},    // fractional milliseconds
		{`"soon"`, 0, false},                      // not a duration
		{`true`, 0, false},                        // not a number or string
		{`1e300`, 0, false},                       // overflows time.Duration
	} {
		t.Run("in="+tc.in, func(t *testing.T) {
			var d mockupstream.Duration
			err := json.Unmarshal([]byte(tc.in), &d)
			if !tc.ok {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, d.D())
		})
	}
	out, err := json.Marshal(mockupstream.Duration(1500 * time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, `"1.5s"`, string(out))
}
