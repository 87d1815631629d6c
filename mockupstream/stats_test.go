package mockupstream_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestStats_Sub(t *testing.T) {
	prev := mockupstream.Stats{Served: 10, InFlight: 3, MaxInFlight: 5, BytesSent: 100,
		ByOutcome: map[string]int64{"ok": 8, "reset": 2}, ByMethod: map[string]int64{"tools/call": 10}}
	now := mockupstream.Stats{Served: 25, InFlight: 1, MaxInFlight: 7, BytesSent: 400,
		ByOutcome: map[string]int64{"ok": 20, "reset": 3, "hang": 2}, ByMethod: map[string]int64{"tools/call": 23, "echo": 2}}
	d := now.Sub(prev)
	assert.Equal(t, mockupstream.Stats{Served: 15, InFlight: 1, MaxInFlight: 7, BytesSent: 300,
		ByOutcome: map[string]int64{"ok": 12, "reset": 1, "hang": 2}, ByMethod: map[string]int64{"tools/call": 13, "echo": 2}}, d)
	assert.Equal(t, int64(20), now.ByOutcome["ok"], "Sub leaves its operands alone")
}

func TestStats_NamesEveryOutcomeAndKind(t *testing.T) {
	s, err := mockupstream.New(mockupstream.Config{})
	if !assert.NoError(t, err) {
		return
	}
	st := s.Stats()
	assert.Len(t, st.ByOutcome, mockupstream.NumOutcomes)
	assert.Len(t, st.ByMethod, mockupstream.NumKinds)
	for i := range mockupstream.NumOutcomes {
		assert.Contains(t, st.ByOutcome, mockupstream.Outcome(i).String())
	}
	for i := range mockupstream.NumKinds {
		assert.Contains(t, st.ByMethod, mockupstream.Kind(i).String())
	}
	assert.Equal(t, "outcome(200)", mockupstream.Outcome(200).String())
	assert.Equal(t, "kind(200)", mockupstream.Kind(200).String())
}
