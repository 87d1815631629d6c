package seed

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
)

// TokenPrefix starts every token [Token] derives.
const TokenPrefix = "hrt_"

// Token returns the bearer token of the user with id userID in a population
// seeded with secret:
//
//	"hrt_" + base64url-without-padding(HMAC-SHA256(secret, "headroom/user/" + decimal userID))
//
// Generators derive tokens from the same secret; the database holds only
// schema.TokenHash of each token. The secret is the credential of every
// seeded user: keep it out of results and logs.
func Token(secret []byte, userID int64) string {
	m := hmac.New(sha256.New, secret)
	var msg [32]byte
	b := append(msg[:0], "headroom/user/"...)
	b = strconv.AppendInt(b, userID, 10)
	m.Write(b)
	var sum [sha256.Size]byte
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(m.Sum(sum[:0]))
}

// Secret is a population's token secret ([Token]). Every way of printing or
// encoding it shows "[redacted]", so a spec can be logged or stored safely.
type Secret []byte

const redacted = "[redacted]"

// String returns "[redacted]", or "" for an empty secret.
func (s Secret) String() string {
	if len(s) == 0 {
		return ""
	}
	return redacted
}

// GoString returns the same as String, for %#v.
func (s Secret) GoString() string { return s.String() }

// Format writes the same as String for every verb, so neither %v nor %x
// nor %d prints the secret's bytes.
func (s Secret) Format(f fmt.State, _ rune) { io.WriteString(f, s.String()) }

// MarshalText returns the same as String, so JSON and text encoders never
// see the secret.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
