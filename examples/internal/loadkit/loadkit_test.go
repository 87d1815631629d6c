package loadkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRoleLeavesTheServiceAlone(t *testing.T) {
	web := PostgresService("svc", "example.com/svc", "SVC")
	worker := Role(web, "svc-worker", "SVC", "worker")
	assert.Equal(t, "worker", worker.Env["SVC_ROLE"])
	assert.Equal(t, "{{.Addr}}", worker.Env["SVC_ADDR"])
	assert.Empty(t, worker.Pprof)
	assert.NotContains(t, web.Env, "SVC_ROLE", "the web service's environment is not shared")
	assert.Equal(t, "/debug/pprof", web.Pprof)
}
