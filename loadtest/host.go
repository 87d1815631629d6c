package loadtest

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// The host checks itself too (principle 3). A step measured while other
// work ran on the machine, or while the hypervisor gave its cores to the
// machine's neighbours (CPU steal), measured the contention, not the
// target, as a lab that stops its other workloads before measuring knows.
// The host sampler reads the machine's CPU accounting; a hold that saw
// too much of either casts a doubt on the step (SelfCheckResult.Doubts),
// naming the cause. Contention only takes from the target, so it voids a breach —
// which may be the neighbours' — and leaves a pass standing: a shared CI
// runner whose hypervisor takes an eighth of its cores still proves that
// the target holds its level, never that it cannot.

// hostTimes is the host's CPU time in clock ticks, all cores together.
type hostTimes struct {
	busy, steal, total float64
	cpus               int
}

// hostSampler measures the host: its busy cores and the cores taken by
// the hypervisor (steal), both averaged since the previous sample.
type hostSampler struct {
	read func() (hostTimes, bool)
	cpus int // the host's cores, read once
	last hostTimes
	at   time.Time // when last was read, by the run's clock
	ok   bool
}

func newHostSampler() *hostSampler {
	h := &hostSampler{read: readHostTimes}
	if t, ok := h.read(); ok {
		h.cpus = t.cpus
	}
	return h
}

// minHostTicks is the least CPU time, in clock ticks per core, that a host
// sample must span: shorter, the ticks are too coarse to tell a share.
const minHostTicks = 50

// ticksPerSecond is /proc/stat's clock (USER_HZ), 100 on Linux.
const ticksPerSecond = 100

// Sample implements Sampler: "host" "cpu_busy" and "cpu_steal" in cores.
// An interval whose ticks do not match the run's clock — a run in virtual
// time (testing/synctest), whose intervals take no real time — is not
// measured.
func (h *hostSampler) Sample(_ context.Context, at time.Time) ([]Measurement, error) {
	now, ok := h.read()
	if !ok {
		return nil, nil
	}
	prev, had, since := h.last, h.ok, at.Sub(h.at)
	cores := float64(max(1, now.cpus))
	d := now.total - prev.total
	if had && d < minHostTicks*cores && since < time.Duration(minHostTicks)*time.Second/ticksPerSecond*4 {
		return nil, nil // keep the earlier reading: the interval grows
	}
	h.last, h.at, h.ok = now, at, true
	if !had || d <= 0 {
		return nil, nil
	}
	if clock := since.Seconds() * ticksPerSecond * cores; d < clock/2 || d > clock*2 {
		return nil, nil // another clock than the host's: virtual time
	}
	return []Measurement{
		{Component: "host", Metric: "cpu_busy", Unit: "cores", Value: (now.busy - prev.busy) / d * cores},
		{Component: "host", Metric: "cpu_steal", Unit: "cores", Value: (now.steal - prev.steal) / d * cores},
	}, nil
}

// hostLoad derives the host's figures for a step from its series: the
// cores the hypervisor took and the cores busy with anything but the run's
// own processes (the generator, and every component sampled in cores).
// ok is false when the host was not measured.
func hostLoad(rs []result.SeriesSummary) (steal, other float64, ok bool) {
	var busy, run float64
	for _, r := range rs {
		switch {
		case r.Component == "host" && r.Metric == "cpu_busy":
			busy, ok = r.Mean, true
		case r.Component == "host" && r.Metric == "cpu_steal":
			steal = r.Mean
		case r.Metric == "cpu" && r.Unit == "cores":
			run += r.Mean
		}
	}
	return steal, math.Max(0, busy-run), ok
}

// hostDoubts returns why the host casts a doubt on the step: steal or
// other work beyond their bounds (fractions of the host's cores).
func (c SelfCheck) hostDoubts(sc result.SelfCheckResult) []string {
	if sc.HostCores <= 0 {
		return nil
	}
	cores := float64(sc.HostCores)
	var out []string
	if c.MaxHostSteal > 0 && sc.HostSteal > c.MaxHostSteal*cores {
		out = append(out, fmt.Sprintf("the host's hypervisor took %.2f of its %d cores during the hold (CPU steal; bound %.0f%%): the machine's neighbours were busy — run again later, or on a dedicated host, to tell whether the target or the machine gave out",
			sc.HostSteal, sc.HostCores, c.MaxHostSteal*100))
	}
	if c.MaxHostOther > 0 && sc.HostOther > c.MaxHostOther*cores {
		out = append(out, fmt.Sprintf("the host was busy with other work: processes outside the run used %.2f of its %d cores during the hold (bound %.0f%%) — stop other workloads on this machine before measuring, or run where nothing else runs, to tell whether the target or the machine gave out",
			sc.HostOther, sc.HostCores, c.MaxHostOther*100))
	}
	return out
}
