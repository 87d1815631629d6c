# Headroom: load scenarios as Go tests. `make help` lists the targets.

GO      ?= go
PKGS    ?= ./...
# Every build but the race detector's is static and -trimpath, as the
# images' and the local backend's binaries are (fixtures build them so):
# then one compile of each dependency serves the images, vet, staticcheck,
# the tests and the modules the tests build, instead of two (about three
# minutes of a cold CI run here). The race detector needs cgo: its
# commands say CGO_ENABLED=1.
export CGO_ENABLED = 0
export GOFLAGS := -trimpath $(GOFLAGS)
RACE    = CGO_ENABLED=1 $(GO)
# Knobs of the load scenarios (see README): USERS, RAMP, HOLD, GAP, ...
# RUN is the scenario `make scenario` runs at full size.
RUN     ?= TestLoad_Smoke
# The main job: seed 000's knee search on one relay pod of POD_CPUS and
# POD_MEMORY, a shape this 2-core machine can take to its limit, with a
# plan sized to end in about seven minutes: probes from 1,500 users
# growing ×1.5, each ramped 30 s and held 40 s (a p95 of a thousand calls
# of a long-tailed upstream is good to about ±15%), bisected to ±25%, at
# most five; the upstream's slowest answers capped at 20 s (calls over the
# 15 s bar either way), so that a probe drains quickly. Each knob can be
# set in the environment (START=1000 make load).
POD_CPUS   ?= 0.5
POD_MEMORY ?= 64MiB
KNEE_KNOBS  = START=$${START:-1500} FACTOR=$${FACTOR:-1.5} MAX=$${MAX:-6000} PRECISION=$${PRECISION:-0.25} \
              PROBES=$${PROBES:-5} RAMP=$${RAMP:-30s} HOLD=$${HOLD:-40s} UPSTREAM_CAP=$${UPSTREAM_CAP:-20s} \
              LOADTEST_DB=$${LOADTEST_DB:-postgres} LOADTEST_ERA=$${LOADTEST_ERA:-handshake}
# Linters, fetched from the Go module proxy on first use.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2
ACTIONLINT  ?= $(GO) run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
# A/B and bisection: the known-good ref, the bad one, and flags for headroom ab.
GOOD    ?=
BAD     ?= HEAD
ABRUN   ?= TestLoad_Smoke/backend=local/db=postgres
ABFLAGS ?= -short
# The smallest change that matters in a bisection's steps: about half the
# regression sought (20% finds a ×1.4 one); noise below it is no change.
MATTERS ?= 20%

.PHONY: help deps test unit unit-build unit-race unit-lane unit-alone scenarios-short scenarios-run load smoke scenario images prebuild-examples bench bench-deps lint lint-cross clean-results report ab bisect bisect-step history history-add history-changes nightly reference-studies

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

test: deps ## the tests: unit, fixture and integration tests, then every scenario in -short mode; the images built beside the first ones
	@# In front: the test binaries (every core), the race-built core, the
	@# speed tests, then the fixtures' lane, then the -short scenarios one
	@# at a time. Beside the first three, on the last core at the lowest
	@# priority (BESIDE: it gets what the front leaves), what only
	@# compiles: the images, then BEFORE_LANE (.ci/run: lint); once the
	@# front is done, it gets every core (its processes' affinity widened;
	@# nice 19 stays). The lane and the scenarios wait for it to end.
	@# Beside the lane, as beside the first tests, BESIDE_LANE (.ci/run:
	@# the example modules' services); the scenarios wait for it too, and
	@# nothing runs beside them (beside the scenarios, the lane's sampler
	@# and fault tests and the scenarios' A/B verdicts failed on the CI
	@# machine). Beside work's output follows the front's.
	@bg=$$(mktemp -d); trap 'rm -rf $$bg' EXIT; \
	echo "== beside the first tests ($(or $(BESIDE),at normal priority)): make images $(BEFORE_LANE)"; \
	( $(BESIDE) $(MAKE) --no-print-directory images >$$bg/images 2>&1; echo $$? >$$bg/images.rc; \
	  for t in $(BEFORE_LANE); do \
	    how="$(BESIDE)"; [ -e $$bg/wide ] && how="$(BESIDE_WIDE)"; \
	    echo "== make $$t ($$(date -u +%T), $${how:-at normal priority})"; \
	    $$how $(MAKE) --no-print-directory $$t 2>&1 || echo "make $$t failed" >>$$bg/before.failed; \
	  done >$$bg/before 2>&1; \
	  echo "== beside work ended at $$(date -u +%T)" >>$$bg/before ) & \
	beside=$$!; front=0; \
	$(MAKE) -k --no-print-directory unit-build unit-race unit-alone || front=1; \
	echo "== waiting for the work beside ($$(date -u +%T)), on every core now"; touch $$bg/wide; \
	if command -v taskset >/dev/null 2>&1; then \
	  ps -e -o pid= -o ppid= | awk -v root=$$beside '{up[$$1] = $$2} END {for (p in up) {q = p; while (q in up && q != root && q > 1) q = up[q]; if (q == root) print p}}' | \
	    xargs -r -n 1 taskset -a -c -p 0-$$(( $$(nproc) - 1 )) >/dev/null 2>&1 || true; \
	fi; \
	wait; \
	echo "== make images (beside the tests)"; cat $$bg/images; images=$$(cat $$bg/images.rc); \
	echo "== beside the tests: $(or $(BEFORE_LANE),nothing more)"; cat $$bg/before $$bg/before.failed 2>/dev/null; \
	if [ $$images -eq 0 ]; then \
	  ( for t in $(BESIDE_LANE); do \
	      echo "== make $$t ($$(date -u +%T), beside the lane: $(or $(BESIDE),at normal priority))"; \
	      $(BESIDE) $(MAKE) --no-print-directory $$t 2>&1 || echo "make $$t failed" >>$$bg/lane.failed; \
	    done >$$bg/lane 2>&1 ) & lane=$$!; \
	  $(MAKE) -k --no-print-directory unit-lane || front=1; \
	  wait $$lane; echo "== beside the lane: $(or $(BESIDE_LANE),nothing)"; cat $$bg/lane $$bg/lane.failed 2>/dev/null; \
	  [ ! -e $$bg/lane.failed ] || front=1; \
	  $(MAKE) -k --no-print-directory scenarios-run || front=1; \
	else echo "the images failed: neither the lane nor any scenario runs"; front=1; fi; \
	[ $$front -eq 0 ] && [ $$images -eq 0 ] && [ ! -e $$bg/before.failed ]

# How work beside the first tests runs: on the last core, at the lowest
# priority (nice 19: the front's tasks preempt it when they wake, yet it
# is never starved outright, as the idle class starved the fixtures'
# reapers past their deadlines). Saturating both cores of the VM here
# stalled the front ~70-100 ms whatever the priority: one core at most is
# left to it.
BESIDE ?= $(shell command -v taskset >/dev/null 2>&1 && echo "nice -n 19 taskset -c $$(( $$(nproc) - 1 ))")
# How it runs once the front is done: on every core, still the lowest
# priority (what already runs beside has its affinity widened).
BESIDE_WIDE ?= $(if $(BESIDE),nice -n 19)
# Targets run beside the first tests, after the images: .ci/run sets lint.
BEFORE_LANE ?=
# Targets run beside the fixtures' lane (as BESIDE: the last core, the
# lowest priority), which mostly waits; the scenarios wait for them.
# .ci/run sets prebuild-examples, which only the example modules'
# scenarios, the last ones, need: beside the first tests, it outlasted
# them by about 45 s here.
BESIDE_LANE ?=

# The core, tested under -race, and every other package: without it the
# A/B statistics (a thousand sequential comparisons) and the Kubernetes
# manifests' check (the API types, built once more for the race detector,
# would add half a minute to a cold run).
NORACE     = /loadtest/ab$$|/loadtest/shard/k8s$$
RACE_PKGS  = $$($(GO) list ./loadtest/... | grep -Ev '$(NORACE)')
OTHER_PKGS = $$($(GO) list ./loadtest/... | grep -E '$(NORACE)') $$($(GO) list $(PKGS) | grep -v '/loadtest')
# Of the other packages, the fixtures' tests mostly wait (containers,
# reapers, throwaway modules' builds: a third of two cores here) and judge
# no speed: they run beside the rest, in the lane (alone in make test,
# after the work beside). The tests that judge speed run with only the
# lowest priority beside them: the race-built
# core (the generator's schedule); cmd/headroom's nightly rehearsal (a
# ×1.5 CPU step found at its night) and A/B of two releases; the gateway
# users' memory (beside the fixtures here, 1,000 users' streams fell
# behind and their stacks grew: 11 KiB a user against a 7 KiB bar).
WAITING    = github.com/headroom-dev/headroom/fixtures
ALONE      = ^(TestNightlyRehearsal|TestABTwoReleasesOfAModule|TestGatewayUserMemory)$$
ALONE_PKGS = ./cmd/headroom/ ./examples/relay/relayload/
REST_PKGS  = $$(for p in $(OTHER_PKGS); do [ $$p = $(WAITING) ] || echo $$p; done)

unit: images unit-build unit-race unit-lane unit-alone ## unit, fixture and integration tests (no load scenarios), the core under -race

# The tests run one package at a time (-p 1: they measure, and share
# Docker), which would also build one package at a time: the test
# binaries are built first on every core (half the cold build time).
# Linking the next package's binary while one runs (go test -p 2 -exec
# flock) saved nothing in a cold run here: the links slowed the runs they
# overlapped. The scenarios' package is compiled here too, on every core,
# rather than alone before them (28 s of a cold run here). -vet=off: make
# lint vets every package.
unit-build:
	$(RACE) test -vet=off -race -c -o /dev/null $(RACE_PKGS)
	$(GO) test -vet=off -c -o /dev/null $(OTHER_PKGS)
	$(GO) test -vet=off -tags load -c -o /dev/null ./loadtest/scenarios/

unit-race:
	$(RACE) test -vet=off -p 1 -count=1 -race -timeout 20m $(RACE_PKGS)

# The fixtures beside the rest; their output follows the rest's.
unit-lane:
	@out=$$(mktemp); echo "$(GO) test -vet=off -count=1 -timeout 30m $(WAITING) (beside the rest)"; \
	  ($(GO) test -vet=off -count=1 -timeout 30m $(WAITING) >$$out 2>&1; echo $$? >$$out.rc) & \
	  $(GO) test -vet=off -p 1 -count=1 -timeout 30m -skip '$(ALONE)' $(REST_PKGS); rest=$$?; wait; \
	  cat $$out; waiting=$$(cat $$out.rc); rm -f $$out $$out.rc; [ $$rest -eq 0 ] && [ $$waiting -eq 0 ]

unit-alone:
	$(GO) test -vet=off -p 1 -count=1 -timeout 30m -run '$(ALONE)' $(ALONE_PKGS)

scenarios-short: images scenarios-run ## every load scenario in -short mode (under a minute of load each), the example modules' too; LOADTEST_MATRIX=full for every backend × database

scenarios-run:
	$(GO) test -vet=off -tags load -short -count=1 -timeout 30m -v ./loadtest/scenarios/
	cd examples/centrifugo && $(GO) test -vet=off -tags load -short -count=1 -timeout 30m -v ./...
	cd examples/grpcgreeter && $(GO) test -vet=off -tags load -short -count=1 -timeout 30m -v ./...

load: images ## the main job: how many users one relay pod (POD_CPUS, POD_MEMORY) holds — the gateway knee search, ending where it gives out
	$(KNEE_KNOBS) LOADTEST_TARGET_CPUS=$(POD_CPUS) LOADTEST_TARGET_MEMORY=$(POD_MEMORY) \
	  $(GO) test -tags load -count=1 -timeout 1h -v -run 'TestLoad_GatewayKnee' ./loadtest/scenarios/

smoke: images ## the smoke ladder at full size: 200, 400, 800 users, each ramped 30 s and held 90 s (knobs: USERS, RAMP, HOLD, LOADTEST_BACKEND)
	$(GO) test -tags load -count=1 -timeout 2h -v -run 'TestLoad_Smoke' ./loadtest/scenarios/

scenario: images ## one scenario at full size: make scenario RUN='TestLoad_Smoke/backend=docker/db=postgres' (knobs in the environment)
	$(GO) test -tags load -count=1 -timeout 2h -v -run '$(RUN)' ./loadtest/scenarios/

deps: ## install what a fresh Debian machine lacks: PostgreSQL's server binaries and PgBouncer (the local backend and the images use them)
	@{ ls /usr/lib/postgresql/*/bin/initdb && { command -v pgbouncer || ls /usr/sbin/pgbouncer; }; } >/dev/null 2>&1 || { \
	  echo "installing PostgreSQL's server binaries and PgBouncer (apt-get install postgresql-15 pgbouncer)"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq postgresql-15 pgbouncer >/dev/null; }

images: deps ## build the local images (relay, mock upstream, Caddy, PostgreSQL, the generator) when Docker answers; cached by content hash
	$(GO) run ./fixtures/cmd/images ./examples/relay ./examples/desk ./examples/orch ./cmd/headroom

# What the tests compile besides their own binaries, built ahead (.ci/run
# runs it beside the first tests): the example modules'
# services (Centrifugo's and grpc-go's reflection example server, each
# built in its own module, as its scenario does).
prebuild-examples:
	cd examples/centrifugo && $(GO) run github.com/headroom-dev/headroom/fixtures/cmd/images -prune 0 github.com/centrifugal/centrifugo/v6
	cd examples/grpcgreeter && $(GO) run github.com/headroom-dev/headroom/fixtures/cmd/images -prune 0 google.golang.org/grpc/examples/features/reflection/server

bench: bench-deps ## benchmarks: the whole generator path's CPU/request beside wrk's, saturation, held streams, recorder, seeding, upstream and relay costs
	$(GO) test -run '^$$' -bench . -benchtime 1x ./loadtest/ ./loadtest/httpc/ ./loadtest/sse/ ./loadtest/grpcc/
	$(GO) test -run '^$$' -bench . -benchtime 3x ./seed/ ./mockupstream/ ./examples/relay/... ./examples/desk/...

bench-deps: ## what the benchmarks compare against: Debian's wrk and nginx-light (BenchmarkWholePath), ghz from the module proxy (BenchmarkBesideGhz); installed where missing, the benchmarks skip, saying so, without them
	@command -v ghz >/dev/null 2>&1 || [ -x "$$($(GO) env GOPATH)/bin/ghz" ] || { echo "installing ghz (go install github.com/bojand/ghz/cmd/ghz@v0.120.0)"; \
	  $(GO) install github.com/bojand/ghz/cmd/ghz@v0.120.0 || echo "could not install ghz: BenchmarkBesideGhz will skip"; }
	@need=""; command -v wrk >/dev/null 2>&1 || need="$$need wrk"; { command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]; } || need="$$need nginx-light"; \
	if [ -n "$$need" ]; then \
	  if command -v apt-get >/dev/null 2>&1; then \
	    sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; echo "installing$$need"; \
	    $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq $$need >/dev/null || echo "could not install$$need: BenchmarkWholePath will skip"; \
	  else echo "no apt-get: install$$need yourself, or BenchmarkWholePath skips"; fi; \
	fi

# The core packages that differ by OS (files of their own per OS, or system
# calls), vetted for darwin and windows too: the rest of the core has no
# code of its own that an OS could break, and vetting it there would build
# its 250 other dependencies twice more (minutes of a cold CI run).
CROSS_PKGS = $$($(GO) list -f '{{.ImportPath}} {{join .IgnoredGoFiles " "}} {{join .Imports " "}}' ./loadtest/... | \
               awk '/_(windows|other|darwin|unix|linux)(_test)?\.go| syscall( |$$)| golang.org\/x\/sys/ {print $$1}')

lint: ## gofmt, go vet (with the load tag: every file), staticcheck, actionlint
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi
	@# The load tag only adds files (no file says !load): one pass sees all.
	$(GO) vet -tags load $(PKGS)
	$(STATICCHECK) -tags load $(PKGS)
	cd examples/centrifugo && $(GO) vet -tags load ./... && $(STATICCHECK) -tags load ./...
	cd examples/grpcgreeter && $(GO) vet -tags load ./... && $(STATICCHECK) -tags load ./...
	$(ACTIONLINT)

# Its own target: compiling the dependencies for two more systems takes
# a minute and a half of both cores here, so .ci/run leaves it to GitHub's
# ci workflow, which runs it on every push and pull request beside .ci/run.
lint-cross: ## go vet of the core's OS-specific packages for darwin and windows
	GOOS=darwin $(GO) vet $(CROSS_PKGS)
	GOOS=windows $(GO) vet $(CROSS_PKGS)

report: ## the HTML report of every result under testdata/results, and testdata/results/index.html over them
	$(GO) run ./cmd/headroom report testdata/results

clean-results: ## remove run outputs (testdata/results)
	rm -rf testdata/results

ab: images ## A/B: the working tree against GOOD (default HEAD), interleaved trials of ABRUN; exit 1 regressed, 3 inconclusive
	$(GO) run ./cmd/headroom ab -base $(or $(GOOD),HEAD) -head . -run '$(ABRUN)' $(ABFLAGS)

bisect: images ## find the commit between GOOD and BAD that cost capacity: git bisect run with A/B steps against GOOD
	@test -n "$(GOOD)" || { echo "give the known-good ref: make bisect GOOD=v0.3.0 [BAD=HEAD] [MATTERS=20%] [ABRUN=...] [ABFLAGS=...]"; exit 2; }
	@bin=$$(mktemp -d)/headroom && $(GO) build -o $$bin ./cmd/headroom && \
	  git bisect start $(BAD) $(GOOD) && \
	  git bisect run $$bin ab -bisect -base $(GOOD) -matters $(MATTERS) -run '$(ABRUN)' $(ABFLAGS); rc=$$?; \
	  git bisect log | tail -5; git bisect reset >/dev/null; rm -rf $$(dirname $$bin); exit $$rc

bisect-step: ## one step of `git bisect run make bisect-step GOOD=ref`: 0 good, 1 bad, 125 skip (unbuildable or inconclusive)
	@test -n "$(GOOD)" || { echo "give the known-good ref: GOOD=<ref>"; exit 128; }
	@$(GO) run ./cmd/headroom ab -bisect -base $(GOOD) -matters $(MATTERS) -run '$(ABRUN)' $(ABFLAGS)

HISTORY ?= testdata/history.jsonl

nightly: ## rehearse the nightly here: a night per commit of a throwaway history, find its planted step and drift, bisect the step
	HEADROOM_NIGHTLY=full $(GO) test -count=1 -timeout 30m -v -run '^TestNightlyRehearsal$$' ./cmd/headroom/

reference-studies: ## rewrite the runtime-studies reference page and its CSVs from the study files under testdata/reference/studies (copy a run's study.json there first)
	$(GO) run ./cmd/headroom render -studies -o testdata/reference/studies testdata/reference/studies

history-changes: ## steps and drifts in every figure of the history (SCENARIO to choose); exit 1 on a change for the worse
	$(GO) run ./cmd/headroom history changes -file $(HISTORY) $(if $(SCENARIO),-scenario '$(SCENARIO)')

history: ## the capacity history, newest first (SCENARIO=TestLoad_GatewayKnee to choose); add a run with make history-add
	$(GO) run ./cmd/headroom history show -file $(HISTORY) $(if $(SCENARIO),-scenario '$(SCENARIO)')

history-add: ## append RESULT (a finished result file) to the capacity history, NOTE saying what changed
	@test -n "$(RESULT)" || { echo "give the result: make history-add RESULT=testdata/results/... [NOTE='what changed']"; exit 2; }
	$(GO) run ./cmd/headroom history add -file $(HISTORY) $(if $(NOTE),-note '$(NOTE)') $(RESULT)
