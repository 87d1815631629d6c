package server

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/headroom-dev/headroom/examples/desk/schema"
)

// listenLoop holds the LISTEN connection (a direct connection to
// DESK_LISTEN_URL, never through a transaction pooler), reconnecting with
// backoff, and hands every notification to onChange. After a reconnect
// the changes in between may be lost: every unit's counts are marked stale
// and every stream is told to resync. ready is closed once LISTEN is first
// in force.
func (s *Server) listenLoop(ctx context.Context, ready chan<- struct{}) {
	defer close(s.listenDone)
	first := true
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, &first, ready)
		s.listening.Store(false)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("desk: LISTEN connection lost; reconnecting", "err", err.Error(), "backoff", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (s *Server) listenOnce(ctx context.Context, first *bool, ready chan<- struct{}) error {
	cc, err := pgx.ParseConfig(s.cfg.listenURL())
	if err != nil {
		return fmt.Errorf("DESK_LISTEN_URL: %w", err)
	}
	nameConnections(cc, "desk-"+s.cfg.Role+"-listen")
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return fmt.Errorf("connect to DESK_LISTEN_URL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+schema.NotifyChannel); err != nil {
		return fmt.Errorf("LISTEN %s: %w", schema.NotifyChannel, err)
	}
	s.listening.Store(true)
	if *first {
		*first = false
		close(ready)
	} else {
		s.resync()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		var c change
		if err := json.Unmarshal([]byte(n.Payload), &c); err != nil {
			s.log.Warn("desk: bad notification; ignored", "payload", n.Payload, "err", err.Error())
			continue
		}
		s.onChange(c)
	}
}

// onChange applies a change announced by any desk process (this one
// included): stale counts, stream events, the worker's wake-up.
func (s *Server) onChange(c change) {
	s.metrics.notification(c.T)
	switch c.T {
	case "case":
		if s.counts != nil {
			s.counts.invalidate(c.Unit)
		}
		if s.cfg.servesAPI() {
			s.hub.publish(c.Unit, changeFrame(c))
		}
	case "outbox":
		if s.cfg.works() {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
	}
}

// resync follows a LISTEN reconnect.
func (s *Server) resync() {
	if s.counts != nil {
		s.counts.invalidateAll()
	}
	s.hub.publish(0, resyncFrame)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
