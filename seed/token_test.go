package seed_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/schema"
	"github.com/headroom-dev/headroom/seed"
)

func TestTokenMatchesDocumentedFormula(t *testing.T) {
	// Computed independently (Python hmac): "hrt_" + base64url(HMAC-SHA256(
	// secret, "headroom/user/42")) without padding.
	tok := seed.Token(testSecret, 42)
	assert.Equal(t, "hrt_mVEWjfGvHPSKMUxNZtRsYO_KDPfXebqZBS2Tba7ZbbM", tok)
	assert.Equal(t, "83887959733cf86a3ad8ae9dadcb52fbf7449b2ae4781c88ba00418b10a85cfa", schema.TokenHash(tok))
}

func TestTokenDependsOnSecretAndUser(t *testing.T) {
	seen := map[string]bool{}
	for _, secret := range [][]byte{testSecret, []byte("another secret")} {
		for id := int64(1); id <= 100; id++ {
			tok := seed.Token(secret, id)
			require.False(t, seen[tok], "token of secret %q user %d repeats", secret, id)
			seen[tok] = true
		}
	}
}

func TestSecretNeverPrinted(t *testing.T) {
	s := seed.Secret("hunter2-hunter2")
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		got := fmt.Sprintf(verb, s)
		assert.NotContains(t, got, "hunter2", verb)
		assert.NotContains(t, got, "68756e74", verb, "hex of the secret")
		assert.NotContains(t, got, "104 117", verb, "bytes of the secret")
	}
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Equal(t, `"[redacted]"`, string(b))
	assert.Equal(t, "", seed.Secret(nil).String(), "empty secret shows empty")
}
