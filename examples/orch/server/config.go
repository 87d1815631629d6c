package server

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/examples/internal/kit"
)

// Roles, the values of Config.Role: what one orch process does.
const (
	// RoleAll serves the API and live streams and runs the orchestrator
	// worker in one process.
	RoleAll = "all"
	// RoleWeb serves the API and live streams only; several may run
	// behind one proxy.
	RoleWeb = "web"
	// RoleWorker runs the orchestrator (ticks, sweep) and serves only
	// /healthz, /readyz, /metrics and pprof.
	RoleWorker = "worker"
	// RoleRunner claims queued tasks and runs their attempts against the
	// vendor; it serves only /healthz, /readyz, /metrics and pprof.
	RoleRunner = "runner"
)

// Config configures an orch process. Start from [DefaultConfig] or
// [ConfigFromEnv].
type Config struct {
	// Addr is the listen address (ORCH_ADDR); default ":8080".
	Addr string
	// DatabaseURL is the postgres:// URL of the database (DATABASE_URL);
	// required.
	DatabaseURL string
	// ListenURL is a direct postgres:// URL for the one LISTEN connection
	// (ORCH_LISTEN_URL); default DatabaseURL.
	ListenURL string
	// Pooler says DatabaseURL goes through a transaction pooler
	// (ORCH_POOLER=1): the simple protocol, no prepared statements.
	Pooler bool
	// Role is RoleAll, RoleWeb, RoleWorker or RoleRunner (ORCH_ROLE);
	// default all.
	Role string
	// DBMaxConns is the pool's size (ORCH_DB_MAX_CONNS); default 20.
	DBMaxConns int
	// ApplicationName is PostgreSQL's application_name for every
	// connection of the process (ORCH_APPLICATION_NAME); default
	// "orch-<role>", so that pg_stat_activity counts connections by kind.
	ApplicationName string
	// Token, when set, is required as "Authorization: Bearer <token>" on
	// every /api/ route (ORCH_TOKEN); default none (no auth).
	Token string
	// RunnerName names the runner in attempts and the scoreboard
	// (ORCH_RUNNER_NAME); default "<hostname>-<pid>".
	RunnerName string
	// RunnerSlots is how many attempts a runner runs at once
	// (ORCH_RUNNER_SLOTS); default 64.
	RunnerSlots int
	// ClaimInterval is how often an idle runner looks for queued tasks
	// besides NOTIFY wake-ups (ORCH_CLAIM_INTERVAL); default 1 s.
	ClaimInterval time.Duration
	// SweepInterval is how often the worker looks for missions needing a
	// tick besides NOTIFY wake-ups (ORCH_SWEEP_INTERVAL); default 5 s.
	SweepInterval time.Duration
	// VendorURL is where a runner POSTs each attempt's prompt
	// (ORCH_VENDOR_URL); empty answers every attempt at once with a
	// canned result (a warning is logged). Only loopback addresses are
	// dialled unless VendorAllowPrivate.
	VendorURL string
	// VendorToken, when set, is sent as "Authorization: Bearer <token>"
	// with each vendor call (ORCH_VENDOR_TOKEN).
	VendorToken string
	// VendorAllowPrivate lets VendorURL resolve to a private network
	// address, as on a container network (ORCH_VENDOR_ALLOW_PRIVATE=1).
	// Public addresses are never dialled.
	VendorAllowPrivate bool
	// VendorTimeout bounds one vendor call (ORCH_VENDOR_TIMEOUT); default 60 s.
	VendorTimeout time.Duration
	// MaxAttempts is how many attempts a task gets before it fails
	// (ORCH_MAX_ATTEMPTS); default 3.
	MaxAttempts int
	// KeepaliveInterval is the time between keepalive comments on a live
	// stream (ORCH_KEEPALIVE_INTERVAL); default 15 s.
	KeepaliveInterval time.Duration
	// DrainTimeout bounds how long Shutdown waits for requests and
	// attempts in flight (ORCH_DRAIN_TIMEOUT); default 30 s.
	DrainTimeout time.Duration
	// MaxBodyBytes is the largest accepted request body
	// (ORCH_MAX_BODY_BYTES); default 4 MiB.
	MaxBodyBytes int64
	// Metrics serves Prometheus at /metrics (ORCH_METRICS=1).
	Metrics bool
	// Pprof serves net/http/pprof at /debug/pprof/ (ORCH_PPROF=1).
	Pprof bool
	// LogLevel is the least level logged (ORCH_LOG_LEVEL); default info.
	LogLevel slog.Level
	// Logger receives the logs; nil logs JSON to stderr at LogLevel.
	Logger *slog.Logger
}

// DefaultConfig returns the configuration with every default filled in
// (DatabaseURL is still required).
func DefaultConfig() Config {
	host, _ := os.Hostname()
	if host == "" {
		host = "runner"
	}
	return Config{
		Addr:              ":8080",
		Role:              RoleAll,
		DBMaxConns:        20,
		RunnerName:        fmt.Sprintf("%s-%d", host, os.Getpid()),
		RunnerSlots:       64,
		ClaimInterval:     time.Second,
		SweepInterval:     5 * time.Second,
		VendorTimeout:     60 * time.Second,
		MaxAttempts:       3,
		KeepaliveInterval: 15 * time.Second,
		DrainTimeout:      30 * time.Second,
		MaxBodyBytes:      4 << 20,
		LogLevel:          slog.LevelInfo,
	}
}

// ConfigFromEnv returns DefaultConfig overridden by the environment, read
// through getenv (os.Getenv in a program). Every bad value is reported,
// each error naming its variable and what would be accepted.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	c := DefaultConfig()
	e := kit.NewEnv(getenv)
	e.String("ORCH_ADDR", &c.Addr)
	e.String("DATABASE_URL", &c.DatabaseURL)
	e.String("ORCH_LISTEN_URL", &c.ListenURL)
	e.Bool("ORCH_POOLER", &c.Pooler)
	e.String("ORCH_ROLE", &c.Role)
	e.Int("ORCH_DB_MAX_CONNS", &c.DBMaxConns)
	e.String("ORCH_APPLICATION_NAME", &c.ApplicationName)
	c.Token = getenv("ORCH_TOKEN")
	e.String("ORCH_RUNNER_NAME", &c.RunnerName)
	e.Int("ORCH_RUNNER_SLOTS", &c.RunnerSlots)
	e.Duration("ORCH_CLAIM_INTERVAL", &c.ClaimInterval)
	e.Duration("ORCH_SWEEP_INTERVAL", &c.SweepInterval)
	e.String("ORCH_VENDOR_URL", &c.VendorURL)
	e.String("ORCH_VENDOR_TOKEN", &c.VendorToken)
	e.Bool("ORCH_VENDOR_ALLOW_PRIVATE", &c.VendorAllowPrivate)
	e.Duration("ORCH_VENDOR_TIMEOUT", &c.VendorTimeout)
	e.Int("ORCH_MAX_ATTEMPTS", &c.MaxAttempts)
	e.Duration("ORCH_KEEPALIVE_INTERVAL", &c.KeepaliveInterval)
	e.DurationOrZero("ORCH_DRAIN_TIMEOUT", &c.DrainTimeout)
	e.Int64("ORCH_MAX_BODY_BYTES", &c.MaxBodyBytes)
	e.Bool("ORCH_METRICS", &c.Metrics)
	e.Bool("ORCH_PPROF", &c.Pprof)
	e.LogLevel("ORCH_LOG_LEVEL", &c.LogLevel)
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
		errs = append(errs, errors.New("DATABASE_URL is empty: want the postgres:// URL of the orchestrator's database"))
	} else if !isPostgresURL(c.DatabaseURL) {
		errs = append(errs, errors.New("DATABASE_URL: want a postgres:// or postgresql:// URL"))
	}
	if c.ListenURL != "" && !isPostgresURL(c.ListenURL) {
		errs = append(errs, errors.New("ORCH_LISTEN_URL: want a postgres:// URL of PostgreSQL itself (not a transaction pooler), or leave it empty to use DATABASE_URL"))
	}
	switch c.Role {
	case RoleAll, RoleWeb, RoleWorker, RoleRunner:
	default:
		errs = append(errs, fmt.Errorf("ORCH_ROLE=%q: want %q, %q, %q or %q", c.Role, RoleAll, RoleWeb, RoleWorker, RoleRunner))
	}
	if c.Addr == "" {
		errs = append(errs, errors.New("ORCH_ADDR is empty: want a listen address such as :8080"))
	} else if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		errs = append(errs, fmt.Errorf("ORCH_ADDR=%q: want host:port or :port", c.Addr))
	}
	if c.DBMaxConns <= 0 {
		errs = append(errs, fmt.Errorf("ORCH_DB_MAX_CONNS=%d: want a positive number of connections", c.DBMaxConns))
	}
	if len(c.ApplicationName) > 63 || strings.ContainsAny(c.ApplicationName, "\x00\n") {
		errs = append(errs, fmt.Errorf("ORCH_APPLICATION_NAME=%q: want at most 63 bytes of printable text", c.ApplicationName))
	}
	if c.RunnerName == "" || len(c.RunnerName) > 100 {
		errs = append(errs, fmt.Errorf("ORCH_RUNNER_NAME=%q: want 1 to 100 bytes", c.RunnerName))
	}
	if c.RunnerSlots <= 0 || c.RunnerSlots > 10000 {
		errs = append(errs, fmt.Errorf("ORCH_RUNNER_SLOTS=%d: want 1 to 10000 concurrent attempts", c.RunnerSlots))
	}
	if c.MaxAttempts <= 0 || c.MaxAttempts > 100 {
		errs = append(errs, fmt.Errorf("ORCH_MAX_ATTEMPTS=%d: want 1 to 100 attempts", c.MaxAttempts))
	}
	positive := func(name string, d time.Duration) {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%s: want a positive duration", name, d))
		}
	}
	positive("ORCH_CLAIM_INTERVAL", c.ClaimInterval)
	positive("ORCH_SWEEP_INTERVAL", c.SweepInterval)
	positive("ORCH_VENDOR_TIMEOUT", c.VendorTimeout)
	positive("ORCH_KEEPALIVE_INTERVAL", c.KeepaliveInterval)
	if c.DrainTimeout < 0 {
		errs = append(errs, fmt.Errorf("ORCH_DRAIN_TIMEOUT=%s: want zero or more", c.DrainTimeout))
	}
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("ORCH_MAX_BODY_BYTES=%d: want a positive number of bytes", c.MaxBodyBytes))
	}
	if c.VendorURL != "" {
		if err := kit.CheckLocalURL(c.VendorURL, c.VendorAllowPrivate, "http://127.0.0.1:8765/echo?delay=12s", "ORCH_VENDOR_ALLOW_PRIVATE", "the orchestrator calls only a local vendor stand-in"); err != nil {
			errs = append(errs, fmt.Errorf("ORCH_VENDOR_URL: %w", err))
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

// appName is ApplicationName, or "orch-<role>".
func (c Config) appName() string {
	if c.ApplicationName != "" {
		return c.ApplicationName
	}
	return "orch-" + c.Role
}

// servesAPI reports whether the role serves the API and streams.
func (c Config) servesAPI() bool { return c.Role == RoleAll || c.Role == RoleWeb }

// orchestrates reports whether the role runs the orchestrator worker.
func (c Config) orchestrates() bool { return c.Role == RoleAll || c.Role == RoleWorker }

// runs reports whether the role runs attempts.
func (c Config) runs() bool { return c.Role == RoleRunner }
