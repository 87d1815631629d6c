package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/headroom-dev/headroom/examples/internal/kit"
)

// outboxBatch is the most outbox rows one worker pass takes.
const outboxBatch = 20

// maxAttempts is how often the worker tries one email before it gives up
// (the row stays unsent with its last error).
const maxAttempts = 10

// runWorker is the background work of RoleWorker and RoleAll: sending the
// outbox (woken by each new reply, and every DESK_OUTBOX_INTERVAL) and
// expiring presence (every half DESK_PRESENCE_TTL). Several workers may
// run: each row is taken with FOR UPDATE SKIP LOCKED.
func (s *Server) runWorker(ctx context.Context) {
	defer close(s.workerDone)
	tick := time.NewTicker(s.cfg.OutboxInterval)
	defer tick.Stop()
	expire := time.NewTicker(s.cfg.PresenceTTL / 2)
	defer expire.Stop()
	select { // a first pass, for the backlog
	case s.wake <- struct{}{}:
	default:
	}
	if s.cfg.MailURL == "" {
		s.log.Warn("desk: DESK_MAIL_URL is empty: outgoing email is marked sent without being sent")
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-tick.C:
		case <-expire.C:
			if _, err := s.pool.Exec(ctx, `DELETE FROM presence WHERE seen_at < now() - $1 * interval '1 microsecond'`, s.cfg.PresenceTTL.Microseconds()); err != nil && ctx.Err() == nil {
				s.log.Warn("desk: expiring presence failed", "err", err.Error())
			}
			continue
		}
		for ctx.Err() == nil {
			n, err := s.sendOutbox(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("desk: sending the outbox failed", "err", err.Error())
				}
				break
			}
			if n < outboxBatch {
				break
			}
		}
	}
}

// mailMessage is what the worker POSTs to DESK_MAIL_URL.
type mailMessage struct {
	ID        int64  `json:"id"`
	CaseID    int64  `json:"case_id"`
	MessageID int64  `json:"message_id"`
	From      string `json:"from"`
	To        string `json:"to"`
	Subject   string `json:"subject"`
	Body      string `json:"body"`
}

// sendOutbox sends one batch of unsent email and returns how many rows it
// took.
func (s *Server) sendOutbox(ctx context.Context) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT id, case_id, message_id, from_email, to_email, subject, body FROM outbox
			WHERE sent_at IS NULL AND attempts < $1 ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`, maxAttempts, outboxBatch)
		if err != nil {
			return err
		}
		msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (mailMessage, error) {
			var m mailMessage
			return m, r.Scan(&m.ID, &m.CaseID, &m.MessageID, &m.From, &m.To, &m.Subject, &m.Body)
		})
		if err != nil {
			return err
		}
		n = len(msgs)
		for _, m := range msgs {
			err := s.mail(ctx, m)
			if err != nil {
				s.metrics.mail("error")
				_, err = tx.Exec(ctx, `UPDATE outbox SET attempts = attempts + 1, last_error = $2 WHERE id = $1`, m.ID, err.Error())
			} else {
				s.metrics.mail("sent")
				_, err = tx.Exec(ctx, `UPDATE outbox SET attempts = attempts + 1, last_error = '', sent_at = now() WHERE id = $1`, m.ID)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// mailTimeout bounds one POST to the mail stand-in.
const mailTimeout = 10 * time.Second

// mail POSTs m to DESK_MAIL_URL; with none, it does nothing.
func (s *Server) mail(ctx context.Context, m mailMessage) error {
	if s.cfg.MailURL == "" {
		return nil
	}
	b, _ := json.Marshal(m)
	ctx, cancel := context.WithTimeout(ctx, mailTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.MailURL, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.cfg.MailToken != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.MailToken)
	}
	resp, err := s.mailClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("mail stand-in answered %s", resp.Status)
	}
	return nil
}

// errMailAddr is a mail address the desk refuses to dial.
var errMailAddr = errors.New("desk: refusing to send mail to a non-loopback address")

// newMailClient returns the HTTP client for DESK_MAIL_URL: it dials only
// loopback addresses (and private ones with allowPrivate), checked after
// name resolution, and follows no redirects.
func newMailClient(allowPrivate bool) *http.Client {
	return kit.LocalClient(allowPrivate, errMailAddr, 4, 30*time.Second)
}
