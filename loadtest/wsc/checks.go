package wsc

import (
	"fmt"

	"github.com/headroom-dev/headroom/loadtest"
)

// Healthy returns a check that every connection of the step connected and
// stayed connected, and every pushed message's written time parsed: no
// failed connect (KindConnect), no connection the target closed with an
// error code or lost (KindConn other than OK) and no KindMalformed
// sample. A connection that the target closed normally while its user
// held it is OK here; Stats.Dropped counts it.
func Healthy() loadtest.Check {
	return loadtest.Custom("sockets healthy", func(s *loadtest.StepResult) error {
		for _, kind := range []string{KindConnect, KindConn, KindMalformed} {
			k := s.Kind(kind)
			if k == nil {
				continue
			}
			if bad := k.Total() - k.Outcomes[loadtest.OK]; bad > 0 {
				return fmt.Errorf("%d failed %s sample(s): %v", bad, kind, k.Errors)
			}
		}
		return nil
	})
}

// Resume returns a check that the connections that dropped in a step
// (a KindConn sample ending in a transport or protocol error, or a close
// code that is not OK: a replica lost, a proxy restarted) connected again
// within it: at least as many connects succeeded (KindConnect OK) as
// connections dropped. A new connection's first connect counts too, so
// the check bounds from one side: it catches connections that gave up or
// kept failing to reconnect (Config.Reconnect). Inject faults early enough
// in the hold for the backoff.
func Resume() loadtest.Check {
	return loadtest.Custom("dropped sockets resume", func(s *loadtest.StepResult) error {
		var dropped, connected, failed int64
		if k := s.Kind(KindConn); k != nil {
			dropped = k.Total() - k.Outcomes[loadtest.OK]
		}
		if k := s.Kind(KindConnect); k != nil {
			connected = k.Outcomes[loadtest.OK]
			failed = k.Total() - connected
		}
		if dropped > connected {
			return fmt.Errorf("%d connections dropped, %d connected again (%d connects failed)", dropped, connected, failed)
		}
		return nil
	})
}
