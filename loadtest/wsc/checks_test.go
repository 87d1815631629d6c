package wsc_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
	"github.com/headroom-dev/headroom/loadtest/wsc"
)

func step(kinds ...*result.KindResult) *loadtest.StepResult {
	return &loadtest.StepResult{Kinds: kinds}
}

func kind(name string, o map[loadtest.Outcome]int64, errs ...string) *result.KindResult {
	return &result.KindResult{Kind: name, Outcomes: o, Errors: errs}
}

// TestHealthyCheck fails a step with a failed connect, a connection lost
// or closed with an error code, or a malformed written time, and passes
// one with only OK samples.
func TestHealthyCheck(t *testing.T) {
	check := wsc.Healthy()
	ok := map[loadtest.Outcome]int64{loadtest.OK: 5}
	assert.NoError(t, check.Evaluate(step(kind(wsc.KindConnect, ok), kind(wsc.KindConn, ok), kind("fanout", ok))))
	err := check.Evaluate(step(kind(wsc.KindConnect, ok), kind(wsc.KindConn, map[loadtest.Outcome]int64{loadtest.OK: 3, loadtest.AppError: 2}, "code 1011")))
	assert.ErrorContains(t, err, "2 failed ws_conn sample(s): [code 1011]")
	assert.Error(t, check.Evaluate(step(kind(wsc.KindConnect, map[loadtest.Outcome]int64{loadtest.HTTP5xx: 1}))))
	assert.Error(t, check.Evaluate(step(kind(wsc.KindMalformed, map[loadtest.Outcome]int64{loadtest.ProtocolError: 1}))))
}

// TestResumeCheck: dropped connections that connected again pass; fewer
// connects than drops fail, with the counts.
func TestResumeCheck(t *testing.T) {
	check := wsc.Resume()
	dropped := kind(wsc.KindConn, map[loadtest.Outcome]int64{loadtest.OK: 3, loadtest.TransportError: 20})
	assert.NoError(t, check.Evaluate(step()), "nothing dropped")
	assert.NoError(t, check.Evaluate(step(dropped, kind(wsc.KindConnect, map[loadtest.Outcome]int64{loadtest.OK: 20}))))
	err := check.Evaluate(step(dropped, kind(wsc.KindConnect, map[loadtest.Outcome]int64{loadtest.OK: 12, loadtest.TransportError: 30})))
	assert.ErrorContains(t, err, "20 connections dropped, 12 connected again (30 connects failed)")
}
