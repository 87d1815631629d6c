package seed_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/seed"
)

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
