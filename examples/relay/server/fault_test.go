package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseFaults(t *testing.T) {
	tests := []struct {
		in      string
		want    Faults
		wantErr string // part of the error; "" for none
	}{
		// Nothing.
		{in: "", want: Faults{}},
		// The two named in the issue, with spaces and an empty item.
		{in: " call-latency:5ms, ,dashboard-n-plus-one", want: Faults{CallLatency: 5 * time.Millisecond, DashboardNPlusOne: true}},
		// Every fault at once.
		{in: "call-latency:1s,list-latency:2ms,call-cpu:100us,dashboard-n-plus-one,auth-no-cache,event-delay:3ms,stream-memory:4096,stream-goroutine,call-leak:8192,record-async:500ms,db-no-reconnect",
			want: Faults{CallLatency: time.Second, ListLatency: 2 * time.Millisecond, CallCPU: 100 * time.Microsecond,
				DashboardNPlusOne: true, AuthNoCache: true, EventDelay: 3 * time.Millisecond, StreamMemory: 4096, StreamGoroutine: true, CallLeak: 8192,
				RecordAsync: 500 * time.Millisecond, NoReconnect: true}},
		// A duration fault without its duration.
		{in: "call-latency", wantErr: "call-latency:DURATION"},
		// A zero duration.
		{in: "call-latency:0s", wantErr: "call-latency:DURATION"},
		// A flag with an argument.
		{in: "auth-no-cache:1", wantErr: "takes no argument"},
		// A bad byte count.
		{in: "stream-memory:lots", wantErr: "stream-memory:BYTES"},
		{in: "call-leak:0", wantErr: "call-leak:BYTES"},
		// An unknown name lists the known ones.
		{in: "typo", wantErr: "known: call-latency"},
	}
	for _, tc := range tests {
		t.Run("faults="+tc.in, func(t *testing.T) {
			f, err := ParseFaults(tc.in)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, f)
			again, err := ParseFaults(f.String())
			require.NoError(t, err)
			assert.Equal(t, f, again, "String round-trips")
		})
	}
}

func TestBurnCPU(t *testing.T) {
	start := time.Now()
	burnCPU(2 * time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Millisecond)
}
