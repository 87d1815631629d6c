package loadtest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// readHostTimes reads the host's CPU times from /proc/stat: busy is user,
// nice and system time (guest time is counted in user time). Interrupt and
// softirq time is left out: the kernel's network work for the run's own
// loopback traffic lands there, charged to no process.
func readHostTimes() (hostTimes, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return hostTimes{}, false
	}
	defer f.Close()
	return parseProcStat(bufio.NewScanner(f))
}

func parseProcStat(sc *bufio.Scanner) (hostTimes, bool) {
	var t hostTimes
	found := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "cpu "):
			f := strings.Fields(line)[1:]
			if len(f) < 8 {
				return hostTimes{}, false
			}
			var v [8]float64
			for i := range v {
				x, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					return hostTimes{}, false
				}
				v[i] = x
			}
			// user nice system idle iowait irq softirq steal
			t.busy = v[0] + v[1] + v[2]
			t.steal = v[7]
			t.total = v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]
			found = true
		case strings.HasPrefix(line, "cpu"):
			t.cpus++
		}
	}
	return t, found && t.cpus > 0
}
