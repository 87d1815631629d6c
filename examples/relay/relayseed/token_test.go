package relayseed_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayseed"
	"github.com/headroom-dev/headroom/examples/relay/schema"
)

func TestTokenMatchesDocumentedFormula(t *testing.T) {
	// Computed independently (Python hmac): "hrt_" + base64url(HMAC-SHA256(
	// secret, "headroom/user/42")) without padding.
	tok := relayseed.Token(testSecret, 42)
	assert.Equal(t, "hrt_mVEWjfGvHPSKMUxNZtRsYO_KDPfXebqZBS2Tba7ZbbM", tok)
	assert.Equal(t, "83887959733cf86a3ad8ae9dadcb52fbf7449b2ae4781c88ba00418b10a85cfa", schema.TokenHash(tok))
}

func TestTokenDependsOnSecretAndUser(t *testing.T) {
	seen := map[string]bool{}
	for _, secret := range [][]byte{testSecret, []byte("another secret")} {
		for id := int64(1); id <= 100; id++ {
			tok := relayseed.Token(secret, id)
			require.False(t, seen[tok], "token of secret %q user %d repeats", secret, id)
			seen[tok] = true
		}
	}
}
