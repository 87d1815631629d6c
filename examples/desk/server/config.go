package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/examples/internal/kit"
)

// Roles, the values of Config.Role: what one desk process does.
const (
	// RoleAll serves the API and runs the background work in one process
	// (the Standard setup).
	RoleAll = "all"
	// RoleWeb serves the API only; several may run behind one proxy.
	RoleWeb = "web"
	// RoleWorker runs the background work (sending the outbox, expiring
	// presence) and serves only /healthz, /readyz, /metrics and pprof.
	RoleWorker = "worker"
)

// Config configures a desk. The zero value is not usable: start from
// [DefaultConfig] or [ConfigFromEnv].
type Config struct {
	// Addr is the listen address (DESK_ADDR); default ":8080".
	Addr string
	// DatabaseURL is the postgres:// URL of the database (DATABASE_URL);
	// required. Through PgBouncer in transaction pooling, set Pooler.
	DatabaseURL string
	// ListenURL is a postgres:// URL the desk holds one direct connection
	// to for LISTEN (DESK_LISTEN_URL); default DatabaseURL. LISTEN does not
	// work through a transaction pooler: point it at PostgreSQL itself.
	ListenURL string
	// Pooler says DatabaseURL goes through a transaction pooler such as
	// PgBouncer (DESK_POOLER=1): queries use the simple protocol, with no
	// prepared statements kept on a server connection; default off. A
	// DatabaseURL with pgx's default_query_exec_mode parameter sets the
	// mode itself.
	Pooler bool
	// Role is RoleAll, RoleWeb or RoleWorker (DESK_ROLE); default all.
	Role string
	// DBMaxConns is the connection pool's size (DESK_DB_MAX_CONNS); default 20.
	DBMaxConns int
	// Metrics serves Prometheus metrics at GET /metrics (DESK_METRICS=1);
	// default off.
	Metrics bool
	// Pprof serves net/http/pprof's profiles at /debug/pprof/
	// (DESK_PPROF=1); default off.
	Pprof bool
	// SharedCounts computes a unit's sidebar counts once for all its agents
	// and keeps them up to CountsTTL or until a change in the unit
	// (DESK_SHARED_COUNTS); default on. Off, every request counts for its
	// agent alone.
	SharedCounts bool
	// CountsTTL is how long shared counts are kept at most
	// (DESK_COUNTS_TTL); default 10 s.
	CountsTTL time.Duration
	// AccessCache keeps a session's agent, unit and access for
	// AccessCacheTTL (DESK_ACCESS_CACHE); default on. Off, every request
	// looks its session up.
	AccessCache bool
	// AccessCacheTTL is how long a session's access is kept
	// (DESK_ACCESS_CACHE_TTL); default 60 s.
	AccessCacheTTL time.Duration
	// Live serves the live stream GET /api/stream (DESK_LIVE); default on.
	// Off, the stream answers 404 and clients poll the inbox.
	Live bool
	// KeepaliveInterval is the time between keepalive comments on a live
	// stream (DESK_KEEPALIVE_INTERVAL); default 15 s.
	KeepaliveInterval time.Duration
	// PresenceTTL is how long a presence heartbeat counts (DESK_PRESENCE_TTL);
	// default 60 s.
	PresenceTTL time.Duration
	// MailURL is where the worker POSTs outgoing email, one JSON object per
	// message (DESK_MAIL_URL): the mail provider's stand-in; empty marks
	// outbox rows sent without sending. Only loopback addresses are
	// dialled, unless MailAllowPrivate.
	MailURL string
	// MailToken, when set, is sent as "Authorization: Bearer <token>" with
	// each POST to MailURL (DESK_MAIL_TOKEN), for a stand-in that wants one
	// (the mock upstream with bearer auth); default none.
	MailToken string
	// MailAllowPrivate lets MailURL resolve to a private network address
	// (10/8, 172.16/12, 192.168/16, fc00::/7), as on a container network
	// (DESK_MAIL_ALLOW_PRIVATE=1); default off. Public addresses are
	// never dialled.
	MailAllowPrivate bool
	// OutboxInterval is how often the worker looks for unsent email besides
	// being woken by new replies (DESK_OUTBOX_INTERVAL); default 1 s.
	OutboxInterval time.Duration
	// PageSize is the number of cases on an inbox page (DESK_PAGE_SIZE);
	// default 25, at most 100.
	PageSize int
	// DrainTimeout bounds how long Shutdown waits for requests in flight
	// (DESK_DRAIN_TIMEOUT); default 30 s.
	DrainTimeout time.Duration
	// MaxBodyBytes is the largest accepted request body (DESK_MAX_BODY_BYTES);
	// default 1 MiB.
	MaxBodyBytes int64
	// LogLevel is the minimum level logged (DESK_LOG_LEVEL: debug, info,
	// warn, error); default info.
	LogLevel slog.Level
	// Logger receives the desk's logs; nil logs JSON to stderr at LogLevel.
	Logger *slog.Logger
}

// DefaultConfig returns the configuration with every default filled in
// (DatabaseURL is still required).
func DefaultConfig() Config {
	return Config{
		Addr:              ":8080",
		Role:              RoleAll,
		DBMaxConns:        20,
		SharedCounts:      true,
		CountsTTL:         10 * time.Second,
		AccessCache:       true,
		AccessCacheTTL:    60 * time.Second,
		Live:              true,
		KeepaliveInterval: 15 * time.Second,
		PresenceTTL:       60 * time.Second,
		OutboxInterval:    time.Second,
		PageSize:          25,
		DrainTimeout:      30 * time.Second,
		MaxBodyBytes:      1 << 20,
		LogLevel:          slog.LevelInfo,
	}
}

// ConfigFromEnv returns DefaultConfig overridden by the environment, read
// through getenv (os.Getenv in a program). Every bad value is reported,
// each error naming its variable and what would be accepted.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	e := kit.NewEnv(getenv)
	e.String("DESK_ADDR", &c.Addr)
	e.String("DATABASE_URL", &c.DatabaseURL)
	e.String("DESK_LISTEN_URL", &c.ListenURL)
	e.Bool("DESK_POOLER", &c.Pooler)
	e.String("DESK_ROLE", &c.Role)
	e.Int("DESK_DB_MAX_CONNS", &c.DBMaxConns)
	e.Bool("DESK_METRICS", &c.Metrics)
	e.Bool("DESK_PPROF", &c.Pprof)
	e.Bool("DESK_SHARED_COUNTS", &c.SharedCounts)
	e.Duration("DESK_COUNTS_TTL", &c.CountsTTL)
	e.Bool("DESK_ACCESS_CACHE", &c.AccessCache)
	e.Duration("DESK_ACCESS_CACHE_TTL", &c.AccessCacheTTL)
	e.Bool("DESK_LIVE", &c.Live)
	e.Duration("DESK_KEEPALIVE_INTERVAL", &c.KeepaliveInterval)
	e.Duration("DESK_PRESENCE_TTL", &c.PresenceTTL)
	e.String("DESK_MAIL_URL", &c.MailURL)
	e.String("DESK_MAIL_TOKEN", &c.MailToken)
	e.Bool("DESK_MAIL_ALLOW_PRIVATE", &c.MailAllowPrivate)
	e.Duration("DESK_OUTBOX_INTERVAL", &c.OutboxInterval)
	e.Int("DESK_PAGE_SIZE", &c.PageSize)
	e.Duration("DESK_DRAIN_TIMEOUT", &c.DrainTimeout)
	e.Int64("DESK_MAX_BODY_BYTES", &c.MaxBodyBytes)
	e.LogLevel("DESK_LOG_LEVEL", &c.LogLevel)
	if err := c.Validate(); err != nil {
		e.Fail(err)
	}
	return c, e.Err()
}

func isPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Validate reports every field that is out of range, naming the
// environment variable that sets it.
func (c Config) Validate() error {
	var errs []error
	if c.DatabaseURL == "" {
		errs = append(errs, errors.New("DATABASE_URL is empty: want the postgres:// URL of the desk's database"))
	} else if !isPostgresURL(c.DatabaseURL) {
		errs = append(errs, errors.New("DATABASE_URL: want a postgres:// or postgresql:// URL"))
	}
	if c.ListenURL != "" && !isPostgresURL(c.ListenURL) {
		errs = append(errs, errors.New("DESK_LISTEN_URL: want a postgres:// URL of PostgreSQL itself (not a transaction pooler), or leave it empty to use DATABASE_URL"))
	}
	if c.Role != RoleAll && c.Role != RoleWeb && c.Role != RoleWorker {
		errs = append(errs, fmt.Errorf("DESK_ROLE=%q: want %q, %q or %q", c.Role, RoleAll, RoleWeb, RoleWorker))
	}
	if c.Addr == "" {
		errs = append(errs, errors.New("DESK_ADDR is empty: want a listen address such as :8080"))
	} else if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("DESK_ADDR=%q: want host:port or :port", c.Addr))
	}
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%s: want a positive duration", name, d))
		}
	}
	if c.DBMaxConns <= 0 {
		errs = append(errs, fmt.Errorf("DESK_DB_MAX_CONNS=%d: want a positive number of connections", c.DBMaxConns))
	}
	positive("DESK_COUNTS_TTL", c.CountsTTL)
	positive("DESK_ACCESS_CACHE_TTL", c.AccessCacheTTL)
	positive("DESK_KEEPALIVE_INTERVAL", c.KeepaliveInterval)
	positive("DESK_PRESENCE_TTL", c.PresenceTTL)
	positive("DESK_OUTBOX_INTERVAL", c.OutboxInterval)
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("DESK_DRAIN_TIMEOUT=%s: want zero or more", c.DrainTimeout))
	}
	if c.PageSize <= 0 || c.PageSize > 100 {
		errs = append(errs, fmt.Errorf("DESK_PAGE_SIZE=%d: want 1 to 100 cases", c.PageSize))
	}
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("DESK_MAX_BODY_BYTES=%d: want a positive number of bytes", c.MaxBodyBytes))
	}
	if c.MailURL != "" {
		if err := kit.CheckLocalURL(c.MailURL, c.MailAllowPrivate, "http://127.0.0.1:8765/mail", "DESK_MAIL_ALLOW_PRIVATE", "the desk sends mail only to a local stand-in"); err != nil {
			errs = append(errs, fmt.Errorf("DESK_MAIL_URL: %w", err))
		}
	}
	return errors.Join(errs...)
}

// listenURL is ListenURL, or DatabaseURL when empty.
func (c Config) listenURL() string {
	if c.ListenURL != "" {
		return c.ListenURL
	}
	return c.DatabaseURL
}

// serves reports whether the role serves the API.
func (c Config) servesAPI() bool { return c.Role != RoleWorker }

// works reports whether the role runs the background work.
func (c Config) works() bool { return c.Role != RoleWeb }
