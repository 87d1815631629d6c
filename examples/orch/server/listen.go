package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/headroom-dev/headroom/examples/orch/schema"
)

// channels are the NOTIFY channels the role listens to.
func (c Config) channels() []string {
	if c.runs() {
		return []string{schema.QueueChannel}
	}
	return []string{schema.EventsChannel}
}

// listenLoop holds the process's one LISTEN connection (a direct
// connection to ORCH_LISTEN_URL, never through a transaction pooler),
// reconnecting with backoff. After a reconnect notifications in between
// may be lost: every stream is dropped with a resync (clients reconnect
// with Last-Event-ID), the worker sweeps and the runner claims. ready is
// closed once LISTEN is first in force.
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
		s.log.Warn("orch: LISTEN connection lost; reconnecting", "err", err.Error(), "backoff", backoff.String())
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
		return fmt.Errorf("ORCH_LISTEN_URL: %w", err)
	}
	cc.RuntimeParams["application_name"] = s.cfg.appName() + "-listen"
	cc.RuntimeParams["timezone"] = "UTC"
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return fmt.Errorf("connect to ORCH_LISTEN_URL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range s.cfg.channels() {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return fmt.Errorf("LISTEN %s: %w", ch, err)
		}
	}
	s.listening.Store(true)
	if *first {
		*first = false
		close(ready)
	} else {
		s.hub.dropAll()
		if s.cfg.orchestrates() {
			go s.sweep(ctx)
		}
		s.wakeRunner()
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		s.onNotification(ctx, n)
	}
}

// onNotification handles one notification: on the queue channel it wakes
// the runner; on the events channel it hands the event to the mission's
// streams (web) and ticks the mission when the kind changes what happens
// next (worker).
func (s *Server) onNotification(ctx context.Context, n *pgconn.Notification) {
	s.metrics.notification(n.Channel)
	if n.Channel == schema.QueueChannel {
		s.wakeRunner()
		return
	}
	mission, id, body, ok := parseEventPayload(n.Payload)
	if !ok {
		s.log.Warn("orch: bad notification; ignored", "channel", n.Channel, "payload", n.Payload)
		return
	}
	watched := s.cfg.servesAPI() && s.hub.watched(mission)
	if !watched && !s.cfg.orchestrates() {
		return
	}
	var e Event
	if body == "" || json.Unmarshal([]byte(body), &e) != nil {
		// Too large for the payload: read it once, for every stream.
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var err error
		e, err = eventByID(fctx, s.pool, id)
		cancel()
		if err != nil {
			s.log.Warn("orch: reading a notified event failed", "event", id, "err", err.Error())
			return
		}
	}
	if watched {
		s.hub.publish(mission, eventItem(e))
	}
	if s.cfg.orchestrates() && schema.TickKinds[e.Kind] {
		s.ticks.mark(mission, reasonEvent)
	}
}

// parseEventPayload splits "<mission>:<event>[:<json>]".
func parseEventPayload(p string) (mission, id int64, body string, ok bool) {
	ms, rest, ok1 := strings.Cut(p, ":")
	ids, body, _ := strings.Cut(rest, ":")
	m, err1 := strconv.ParseInt(ms, 10, 64)
	i, err2 := strconv.ParseInt(ids, 10, 64)
	return m, i, body, ok1 && err1 == nil && err2 == nil
}
