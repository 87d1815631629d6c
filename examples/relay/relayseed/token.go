package relayseed

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
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
// schema.TokenHash of each token (package examples/relay/schema). The secret is the credential of every
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
