// Package deskseed fills the desk's schema (examples/desk/schema) with a
// deterministic helpdesk: one organization, its units with branding and
// canned replies, agents each signed in on a session of their own, accounts,
// contacts, and two years of cases with their conversations.
//
//	spec := deskseed.Full                  // 200,000 cases, 1,000,000 messages
//	spec.Secret = secret                   // never logged, never hashed
//	pop, err := deskseed.Apply(ctx, pool, spec, deskseed.WithLogf(t.Logf))
//	token := pop.Token(agentID)            // the agent's bearer token
//
// The same spec (Seed included) gives identical rows on every run. Rows
// are generated one at a time and streamed with seed.Copy (COPY through
// pgx). Apply is idempotent: a seed_marker row records the spec's hash
// ([Spec.Hash]); the same spec again is a no-op, another one an error.
package deskseed

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/headroom-dev/headroom/seed"
)

// Spec describes a helpdesk population. Ids are dense and start at 1 in
// every table. Agent a belongs to unit (a-1) mod Units + 1.
type Spec struct {
	// Name is the population's key in seed_marker.
	Name string
	// Seed selects the random streams: the same Spec gives the same rows.
	Seed uint64
	// Units is the number of units (teams), all under organization 1.
	Units int
	// CannedPerUnit is the number of canned replies of each unit.
	CannedPerUnit int
	// Agents is the number of agents, each with one session (token).
	Agents int
	// Accounts is the number of customer accounts (companies).
	Accounts int
	// Contacts is the number of contacts (requesters), spread over accounts.
	Contacts int
	// Cases is the number of cases, created over Span before End.
	Cases int
	// Messages is the number of messages over all cases (requester
	// messages, replies, notes); at least Cases, each case has one or more.
	Messages int
	// Span is how far back before End cases were created.
	Span time.Duration
	// End is the instant the history ends; the zero End is [DefaultEnd], a
	// fixed instant, so a spec is deterministic.
	End time.Time
	// Secret derives every agent's session token ([Token]); required. It
	// is never printed, logged or part of [Spec.Hash].
	Secret seed.Secret `json:"-"`
}

// DefaultEnd is the End of a spec that leaves it zero.
var DefaultEnd = time.Date(2026, 10, 26, 9, 0, 0, 0, time.UTC)

// Full is the published data set of the helpdesk load test (seed 004):
// 200 units, 3,000 agents, 20,000 accounts, 100,000 contacts, 200,000
// cases over two years and 1,000,000 messages; about 0.7 GB.
var Full = Spec{
	Name: "desk-full", Seed: 4,
	Units: 200, CannedPerUnit: 20, Agents: 3000, Accounts: 20000, Contacts: 100000,
	Cases: 200000, Messages: 1000000, Span: 730 * 24 * time.Hour,
}

// Short is a small population with Full's shape, for quick tests: 10
// units, 60 agents, 2,000 cases, 10,000 messages.
var Short = Spec{
	Name: "desk-short", Seed: 4,
	Units: 10, CannedPerUnit: 5, Agents: 60, Accounts: 200, Contacts: 1000,
	Cases: 2000, Messages: 10000, Span: 730 * 24 * time.Hour,
}

// Validate reports every field out of range.
func (s Spec) Validate() error {
	var errs []error
	pos := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, fmt.Errorf("deskseed: Spec.%s=%d: want at least 1", name, v))
		}
	}
	if s.Name == "" {
		errs = append(errs, errors.New("deskseed: Spec.Name is empty: name the population"))
	}
	pos("Units", s.Units)
	pos("CannedPerUnit", s.CannedPerUnit)
	pos("Agents", s.Agents)
	pos("Accounts", s.Accounts)
	pos("Contacts", s.Contacts)
	pos("Cases", s.Cases)
	if s.Agents > 0 && s.Units > 0 && s.Agents < s.Units {
		errs = append(errs, fmt.Errorf("deskseed: Spec.Agents=%d is below Spec.Units=%d: every unit needs an agent", s.Agents, s.Units))
	}
	if s.Messages < s.Cases {
		errs = append(errs, fmt.Errorf("deskseed: Spec.Messages=%d is below Spec.Cases=%d: every case has at least one message", s.Messages, s.Cases))
	}
	if s.Span <= 0 {
		errs = append(errs, fmt.Errorf("deskseed: Spec.Span=%s: want a positive duration", s.Span))
	}
	if len(s.Secret) == 0 {
		errs = append(errs, errors.New("deskseed: Spec.Secret is empty: the agents' tokens derive from it"))
	}
	return errors.Join(errs...)
}

func (s Spec) end() time.Time {
	if s.End.IsZero() {
		return DefaultEnd
	}
	return s.End.UTC().Truncate(time.Microsecond)
}

// Hash returns a short hex digest of everything that shapes the rows
// (not the secret).
func (s Spec) Hash() string {
	h := sha256.New()
	fmt.Fprintf(h, "desk/v1 %q seed=%d units=%d canned=%d agents=%d accounts=%d contacts=%d cases=%d messages=%d span=%d end=%d",
		s.Name, s.Seed, s.Units, s.CannedPerUnit, s.Agents, s.Accounts, s.Contacts, s.Cases, s.Messages,
		int64(s.Span), s.end().UnixMicro())
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// UnitOf returns the unit of agent id.
func (s Spec) UnitOf(agentID int64) int64 { return (agentID-1)%int64(s.Units) + 1 }

// AgentsOf returns the number of agents of unit u: agents u, u+Units,
// u+2·Units, … up to Agents.
func (s Spec) AgentsOf(unit int64) int {
	if unit < 1 || unit > int64(s.Units) || unit > int64(s.Agents) {
		return 0
	}
	return int((int64(s.Agents)-unit)/int64(s.Units)) + 1
}

// TokenPrefix starts every token [Token] derives.
const TokenPrefix = "hdk_"

// Token returns the session token of agent agentID in a population seeded
// with secret:
//
//	"hdk_" + base64url-without-padding(HMAC-SHA256(secret, "headroom/desk/agent/" + decimal agentID))
//
// The database holds only schema.TokenHash of each token.
func Token(secret []byte, agentID int64) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("headroom/desk/agent/" + strconv.FormatInt(agentID, 10)))
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Population is a seeded helpdesk: its spec and what Apply did.
type Population struct {
	// Spec is the spec it was seeded from.
	Spec Spec
	// Hash is Spec.Hash().
	Hash string
	// Applied is true when Apply wrote the rows, false when they were
	// already there.
	Applied bool
	// Took is how long Apply took.
	Took time.Duration
}

// Token returns agent agentID's bearer token.
func (p *Population) Token(agentID int64) string { return Token(p.Spec.Secret, agentID) }

// String names the population and its sizes (never the secret).
func (p *Population) String() string {
	s := p.Spec
	return fmt.Sprintf("population %q (hash %s): %d units, %d agents, %d accounts, %d contacts, %d cases, %d messages",
		s.Name, p.Hash, s.Units, s.Agents, s.Accounts, s.Contacts, s.Cases, s.Messages)
}
