package deskseed

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/examples/desk/schema"
	"github.com/headroom-dev/headroom/seed"
)

// table is one table's load: its columns and a row generator.
type table struct {
	name    string
	columns []string
	n       int64
	rows    seed.Rows
}

// Salts of the random streams, one per kind of row.
const (
	saltUnit uint64 = iota + 1
	saltCanned
	saltAgent
	saltAccount
	saltContact
	saltCase
	saltPair
	saltBody
)

// mix is SplitMix64's finalizer: a well-spread hash of x.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// rng returns the random stream of row id of a kind.
func (s Spec) rng(salt uint64, id int64) *rand.Rand {
	return rand.New(rand.NewPCG(mix(s.Seed^salt<<56), uint64(id)))
}

// hashOf is one deterministic number for (kind, id).
func (s Spec) hashOf(salt uint64, id int64) uint64 { return mix(mix(s.Seed^salt<<56) ^ uint64(id)) }

var (
	firstNames   = strings.Fields(`Ada Alan Grace Linus Barbara Ken Dennis Margaret Edsger Donald Frances John Radia Tim Vint Leslie Niklaus Sophie Hedy Katherine Guido Bjarne James Anita Brian Carol David Elena Farid Greta Hugo Ines Jonas Kira Lars Mina Nora Omar Paula Quinn Rosa Sven Tara Umar Vera Walt Xena Yusuf Zoe`)
	lastNames    = strings.Fields(`Lovelace Turing Hopper Torvalds Liskov Thompson Ritchie Hamilton Dijkstra Knuth Allen McCarthy Perlman Berners Cerf Lamport Wirth Wilson Lamarr Johnson Rossum Stroustrup Gosling Borg Kernighan Shaw Moreau Novak Khan Berg Costa Duarte Eriksen Fischer Garcia Horvat Ivanova Jensen Kowalski Larsen Meyer Nilsen Olsen Petrov Quist Romero Silva Tanaka Ueda Varga`)
	companies    = strings.Fields(`Acme Globex Initech Umbrella Hooli Vandelay Stark Wayne Wonka Tyrell Cyberdyne Soylent Massive Aperture Oscorp Gringotts Monarch Nakatomi Virtucon Pied`)
	suffixes     = strings.Fields(`Ltd GmbH Inc SA BV AB Oy AS Srl plc`)
	products     = strings.Fields(`VPN laptop printer email calendar wifi badge invoice payroll portal phone monitor docking license backup database dashboard account password mailbox`)
	problems     = []string{"cannot connect to", "is very slow:", "error when opening", "please reset", "request access to", "broken", "keeps crashing:", "how do I configure", "question about", "not syncing:", "locked out of", "needs an upgrade:"}
	units        = strings.Fields(`Service IT HR Finance Facilities Legal Sales Support Operations Security`)
	words        = strings.Fields(`the a to and of in is it for on that this with we you be have not are as at please thanks hello hi regards issue problem since yesterday today morning after update again still works fine now error message screen shows when I try open click button page login account access team colleague office remote home network connection server restart reboot cache browser chrome firefox settings profile attached screenshot log file ticket case number urgent deadline meeting client customer order payment report export import sync folder shared drive permission admin manager approve request new old version release patch fix workaround temporary permanent check confirm resolved closed reopen follow up soon week month`)
	cannedTitles = []string{"Greeting", "Need more details", "Password reset steps", "Known outage", "Escalated", "Closing", "Remote session", "Access approved", "Access denied", "Waiting for vendor", "Hardware swap", "Restart first", "Cache clear", "Out of scope", "Duplicate", "Survey", "Holiday hours", "Follow-up", "Thanks", "Policy link"}
)

// sentence appends n words drawn from r to b, capitalized and ended by a
// full stop every few words.
func sentence(b *strings.Builder, r *rand.Rand, n int) {
	start := true
	for i := range n {
		w := words[r.IntN(len(words))]
		if start {
			b.WriteString(strings.ToUpper(w[:1]))
			b.WriteString(w[1:])
			start = false
		} else {
			b.WriteString(w)
		}
		if r.IntN(9) == 0 || i == n-1 {
			b.WriteString(". ")
			start = true
		} else {
			b.WriteByte(' ')
		}
	}
}

func personName(h uint64) string {
	return firstNames[h%uint64(len(firstNames))] + " " + lastNames[(h>>16)%uint64(len(lastNames))]
}

func (s Spec) accountName(id int64) string {
	h := s.hashOf(saltAccount, id)
	return fmt.Sprintf("%s %s %d %s", companies[h%uint64(len(companies))], companies[(h>>8)%uint64(len(companies))], id, suffixes[(h>>16)%uint64(len(suffixes))])
}

func accountDomain(id int64) string { return fmt.Sprintf("acct%d.example", id) }

// contact returns contact id's account, name and email.
func (s Spec) contact(id int64) (account int64, name, email string) {
	h := s.hashOf(saltContact, id)
	account = int64(h%uint64(s.Accounts)) + 1
	name = personName(h >> 20)
	first, last, _ := strings.Cut(strings.ToLower(name), " ")
	email = fmt.Sprintf("%s.%s%d@%s", first, last, id, accountDomain(account))
	return
}

func (s Spec) agentName(id int64) string { return personName(s.hashOf(saltAgent, id)) }

// messageCount returns case i's (0-based) number of messages and the
// number of messages of the cases before it. The counts vary from case to
// case, yet sum to Spec.Messages exactly: case i starts from its share
// b(i) = ⌊(i+1)M/C⌋ − ⌊iM/C⌋, and the two cases of each pair (2k, 2k+1)
// trade a random d, one gaining what the other loses.
func (s Spec) messageCount(i int64) (n, before int64) {
	M, C := int64(s.Messages), int64(s.Cases)
	b := func(j int64) int64 { return (j+1)*M/C - j*M/C }
	k := i / 2
	d := int64(0)
	if 2*k+1 < C { // a full pair
		lo, hi := -(b(2*k) - 1), b(2*k+1)-1
		d = lo + int64(s.hashOf(saltPair, k)%uint64(hi-lo+1))
	}
	if i%2 == 0 {
		return b(i) + d, i * M / C
	}
	return b(i) - d, (i-1)*M/C + b(i-1) + d
}

// casePlan is everything about one case but its message bodies.
type casePlan struct {
	id, unit, contact, account, assignee int64
	subject, status, name, email         string
	priority                             int16
	created                              time.Time
	firstMsg                             int64
	times                                []time.Time
	kinds                                []string
	authors                              []int64 // 0: the requester
}

// plan builds case id's plan; the cases and messages generators both call
// it, so a case and its messages agree.
func (s Spec) plan(id int64, p *casePlan) {
	r := s.rng(saltCase, id)
	end := s.end()
	n, before := s.messageCount(id - 1)
	*p = casePlan{id: id, firstMsg: before + 1, times: p.times[:0], kinds: p.kinds[:0], authors: p.authors[:0]}
	p.unit = int64(r.IntN(s.Units)) + 1
	p.contact = int64(r.IntN(s.Contacts)) + 1
	p.account, p.name, p.email = s.contact(p.contact)
	prob := problems[r.IntN(len(problems))]
	p.subject = fmt.Sprintf("%s%s %s %s", strings.ToUpper(prob[:1]), prob[1:], products[r.IntN(len(products))], products[r.IntN(len(products))])
	p.priority = int16([]int{1, 2, 2, 2, 3, 3, 4}[r.IntN(7)])
	// Created uniformly over the span; the messages follow within the time
	// left, minutes to days apart.
	p.created = end.Add(-time.Duration(r.Int64N(int64(s.Span)))).Truncate(time.Microsecond)
	left := end.Sub(p.created)
	step := min(left/time.Duration(n+1), 72*time.Hour)
	t := p.created
	for j := range n {
		if j > 0 {
			f := r.Float64()
			t = t.Add(time.Duration(f * f * float64(step))).Truncate(time.Microsecond)
		}
		p.times = append(p.times, t)
	}
	last := p.times[len(p.times)-1]
	age := end.Sub(last)
	// Recent cases are mostly open, old ones mostly closed, a few stale.
	switch x := r.IntN(100); {
	case age < 30*24*time.Hour:
		p.status = pick(x, []int{15, 30, 20, 5, 30}, schema.StatusNew, schema.StatusOpen, schema.StatusPending, schema.StatusOnHold, schema.StatusSolved)
	default:
		p.status = pick(x, []int{1, 2, 1, 1, 15, 80}, schema.StatusNew, schema.StatusOpen, schema.StatusPending, schema.StatusOnHold, schema.StatusSolved, schema.StatusClosed)
	}
	unitAgent := func() int64 { return p.unit + int64(s.Units)*int64(r.IntN(s.AgentsOf(p.unit))) }
	switch {
	case p.status == schema.StatusNew && r.IntN(2) == 0:
	case p.status != schema.StatusNew && r.IntN(100) < 8:
	default:
		p.assignee = unitAgent()
	}
	for j := range n {
		kind, author := schema.KindRequester, int64(0)
		if j > 0 && p.status != schema.StatusNew {
			switch x := r.IntN(100); {
			case x < 45:
				kind = schema.KindReply
			case x < 65:
				kind = schema.KindNote
			}
		}
		if kind != schema.KindRequester {
			author = p.assignee
			if author == 0 {
				author = unitAgent()
			}
		}
		p.kinds = append(p.kinds, kind)
		p.authors = append(p.authors, author)
	}
}

// pick returns the value whose cumulative weight first exceeds x.
func pick(x int, weights []int, values ...string) string {
	for i, w := range weights {
		if x < w {
			return values[i]
		}
		x -= w
	}
	return values[len(values)-1]
}

// tables returns the population's loads in dependency order.
func (s Spec) tables() []table {
	end := s.end()
	gen := func(n int, row func(id int64, r []any) []any) seed.Rows {
		return func(yield func([]any) bool) error {
			var buf []any
			for id := int64(1); id <= int64(n); id++ {
				buf = row(id, buf[:0])
				if !yield(buf) {
					return nil
				}
			}
			return nil
		}
	}
	canned := s.Units * s.CannedPerUnit
	expires := end.AddDate(50, 0, 0)
	return []table{
		{"organizations", []string{"id", "name"}, 1, gen(1, func(id int64, r []any) []any {
			return append(r, id, "Example Organization")
		})},
		{"units", []string{"id", "org_id", "name", "email_from", "brand_color", "logo_url", "signature"}, int64(s.Units), gen(s.Units, func(id int64, r []any) []any {
			h := s.hashOf(saltUnit, id)
			name := fmt.Sprintf("%s %03d", units[h%uint64(len(units))], id)
			return append(r, id, int64(1), name, fmt.Sprintf("unit%03d@desk.example", id), fmt.Sprintf("#%06x", (h>>8)&0xffffff),
				fmt.Sprintf("https://cdn.desk.example/logos/unit%03d.png", id), "Kind regards,\n"+name+" team")
		})},
		{"canned_replies", []string{"id", "unit_id", "title", "body"}, int64(canned), gen(canned, func(id int64, r []any) []any {
			rr := s.rng(saltCanned, id)
			var b strings.Builder
			sentence(&b, rr, 30+rr.IntN(90))
			return append(r, id, (id-1)/int64(s.CannedPerUnit)+1, cannedTitles[(id-1)%int64(s.CannedPerUnit)%int64(len(cannedTitles))], b.String())
		})},
		{"agents", []string{"id", "unit_id", "name", "email"}, int64(s.Agents), gen(s.Agents, func(id int64, r []any) []any {
			name := s.agentName(id)
			return append(r, id, s.UnitOf(id), name, fmt.Sprintf("agent%d@desk.example", id))
		})},
		{"sessions", []string{"token_hash", "agent_id", "expires_at"}, int64(s.Agents), gen(s.Agents, func(id int64, r []any) []any {
			return append(r, schema.TokenHash(Token(s.Secret, id)), id, expires)
		})},
		{"accounts", []string{"id", "name", "domain"}, int64(s.Accounts), gen(s.Accounts, func(id int64, r []any) []any {
			return append(r, id, s.accountName(id), accountDomain(id))
		})},
		{"contacts", []string{"id", "account_id", "name", "email"}, int64(s.Contacts), gen(s.Contacts, func(id int64, r []any) []any {
			a, name, email := s.contact(id)
			return append(r, id, a, name, email)
		})},
		{"cases", []string{"id", "unit_id", "subject", "status", "priority", "contact_id", "account_id", "requester_name", "requester_email",
			"assignee_id", "created_at", "last_activity_at", "message_count"}, int64(s.Cases), s.caseRows()},
		{"messages", []string{"id", "case_id", "kind", "agent_id", "body", "created_at"}, int64(s.Messages), s.messageRows()},
	}
}

func (s Spec) caseRows() seed.Rows {
	return func(yield func([]any) bool) error {
		var p casePlan
		row := make([]any, 13)
		for id := int64(1); id <= int64(s.Cases); id++ {
			s.plan(id, &p)
			var assignee any
			if p.assignee != 0 {
				assignee = p.assignee
			}
			row = append(row[:0], p.id, p.unit, p.subject, p.status, p.priority, p.contact, p.account, p.name, p.email,
				assignee, p.created, p.times[len(p.times)-1], int32(len(p.times)))
			if !yield(row) {
				return nil
			}
		}
		return nil
	}
}

func (s Spec) messageRows() seed.Rows {
	return func(yield func([]any) bool) error {
		var p casePlan
		row := make([]any, 6)
		var b strings.Builder
		for id := int64(1); id <= int64(s.Cases); id++ {
			s.plan(id, &p)
			for j := range p.times {
				msg := p.firstMsg + int64(j)
				r := s.rng(saltBody, msg)
				b.Reset()
				if p.kinds[j] == schema.KindReply {
					b.WriteString("Hello " + p.name + ", ")
				}
				sentence(&b, r, 25+r.IntN(80))
				var author any
				if p.authors[j] != 0 {
					author = p.authors[j]
				}
				row = append(row[:0], msg, p.id, p.kinds[j], author, b.String(), p.times[j])
				if !yield(row) {
					return nil
				}
			}
		}
		return nil
	}
}
