package relayseed

import (
	"strconv"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Population is what a seeded spec holds, as the load generators need it:
// the users with their ids, workspaces and connectors, and their tokens.
// [Spec.Population] computes it without a database; [Apply] returns it.
type Population struct {
	// Spec is the normalized spec (defaults filled in).
	Spec Spec
	// Hash is Spec.Hash(), as recorded in seed_marker.
	Hash string
	// Workspaces holds the workspace ids, ascending.
	Workspaces []int64
	// Users holds every user, ascending by id (workspace by workspace).
	Users []User
	// Applied is true when Apply wrote the population, false when the
	// database already held it (or when it came from Spec.Population).
	Applied bool
}

// User is one seeded user.
type User struct {
	// ID is users.id.
	ID int64
	// WorkspaceID is the user's workspace.
	WorkspaceID int64
	// Name is users.name, "user-<id>".
	Name string
	// Connectors are the user's connectors in order.
	Connectors []Connector
}

// Connector is one of a user's connectors.
type Connector struct {
	// ID is connectors.id.
	ID int64
	// Name is connectors.name, unique per user; the relay names the
	// connector's tools "<Name>__<tool>".
	Name string
	// Tools are the tools dealt to this connector (shared between users:
	// do not modify).
	Tools []string
}

// connectorNames are the first connector names; later ones get a suffix.
var connectorNames = [...]string{
	"github", "slack", "linear", "notion", "jira", "drive", "calendar", "gmail",
	"sentry", "datadog", "stripe", "hubspot", "zendesk", "figma", "asana", "postgres",
}

// ConnectorName returns the name of a user's k-th connector (k from 0):
// "github", "slack", … for the first 16, then "github-2", "slack-2", ….
func ConnectorName(k int) string {
	n := connectorNames[k%len(connectorNames)]
	if k >= len(connectorNames) {
		n += "-" + strconv.Itoa(k/len(connectorNames)+1)
	}
	return n
}

// QualifiedTools returns the connector's tools as the relay names them in
// tools/list and tools/call: "<connector>__<tool>".
func (c Connector) QualifiedTools() []string {
	out := make([]string, len(c.Tools))
	for i, t := range c.Tools {
		out[i] = c.Name + "__" + t
	}
	return out
}

// Population validates the spec and returns the population it describes
// (Applied false). Generators in another process call it with the same spec
// and secret to learn the users and derive their tokens.
func (s Spec) Population() (*Population, error) {
	n := s.normalized()
	if err := n.validate(true); err != nil {
		return nil, err
	}
	return n.population(), nil
}

// population builds the population of a normalized, valid spec.
func (s Spec) population() *Population {
	p := &Population{Spec: s, Hash: s.Hash()}
	p.Workspaces = make([]int64, s.Workspaces)
	for w := range p.Workspaces {
		p.Workspaces[w] = int64(w + 1)
	}
	// Tool i goes to connector i mod C; the slices are shared by all users.
	c := s.ConnectorsPerUser
	dealt := make([][]string, c)
	for i, t := range s.Tools {
		dealt[i%c] = append(dealt[i%c], t)
	}
	p.Users = make([]User, s.Workspaces*s.UsersPerWorkspace)
	conns := make([]Connector, len(p.Users)*c)
	for i := range p.Users {
		id := int64(i + 1)
		u := &p.Users[i]
		u.ID = id
		u.WorkspaceID = int64(i/s.UsersPerWorkspace + 1)
		u.Name = "user-" + strconv.FormatInt(id, 10)
		u.Connectors = conns[i*c : (i+1)*c : (i+1)*c]
		for k := range u.Connectors {
			u.Connectors[k] = Connector{ID: int64(i*c + k + 1), Name: ConnectorName(k), Tools: dealt[k]}
		}
	}
	return p
}

// Token returns the bearer token of the user with id userID ([Token] with
// the spec's secret).
func (p *Population) Token(userID int64) string { return Token(p.Spec.Secret, userID) }

// TokenOf returns the token of modeled user i (from 0) of a load test, the
// population's users taken in turn: user i is Users[i mod len(Users)]. It
// is what a workload's Token function wants.
func (p *Population) TokenOf(i int) string { return p.Token(p.Users[i%len(p.Users)].ID) }

// User returns the user with id id, or false when the population has none.
func (p *Population) User(id int64) (User, bool) {
	if id < 1 || id > int64(len(p.Users)) {
		return User{}, false
	}
	return p.Users[id-1], true
}

// String summarizes the population in one line, without the secret.
func (p *Population) String() string {
	s := p.Spec
	return thousands.Sprintf("population %q (spec hash %s): %d workspaces, %d users, %d connectors, %d usage rows, %d events over %d days ending %s",
		s.Name, p.Hash, len(p.Workspaces), len(p.Users), len(p.Users)*s.ConnectorsPerUser,
		s.UsageRows, s.EventsRows, s.Days, s.End.Format(time.RFC3339))
}

// thousands prints numbers with thousands separators: 1234567 → "1,234,567".
var thousands = message.NewPrinter(language.English)
