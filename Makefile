# Headroom: load scenarios as Go tests. `make help` lists the targets.

GO      ?= go
PKGS    ?= ./...
# Knobs of the load scenarios (see README): USERS, RAMP, HOLD, GAP, ...
LOADRUN ?= TestLoad_Smoke

.PHONY: help test unit scenarios-short load images bench lint clean-results bisect-step

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

test: images unit scenarios-short ## the tests: build the images, then unit, fixture and integration tests, then every scenario in -short mode

unit: ## unit, fixture and integration tests (no load scenarios)
	$(GO) test -p 1 -count=1 -timeout 30m $(PKGS)

scenarios-short: images ## every load scenario in -short mode (under a minute of load each)
	$(GO) test -tags load -short -count=1 -timeout 30m -v ./loadtest/scenarios/

load: images ## the main job: the smoke scenario at full size (knobs: USERS, RAMP, HOLD, LOADTEST_BACKEND)
	$(GO) test -tags load -count=1 -timeout 2h -v -run '$(LOADRUN)' ./loadtest/scenarios/

images: ## build the local images (relay, mock upstream, Caddy, PostgreSQL) when Docker answers; cached by content hash
	$(GO) run ./fixtures/cmd/images

bench: ## benchmarks: generator CPU/request, saturation, held streams, recorder, seeding, upstream and relay costs
	$(GO) test -run '^$$' -bench . -benchtime 1x ./loadtest/ ./loadtest/httpc/ ./loadtest/sse/
	$(GO) test -run '^$$' -bench . -benchtime 3x ./seed/ ./mockupstream/ ./examples/relay/...

lint: ## gofmt check and go vet (with and without the load tag)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags load ./loadtest/scenarios/

clean-results: ## remove run outputs (testdata/results)
	rm -rf testdata/results

bisect-step: ## for `git bisect run`: 0 the scenario holds, 1 it does not, 125 cannot measure (build failure, invalid run)
	@$(GO) test -tags load -c -o /tmp/headroom-bisect.test ./loadtest/scenarios/ >/dev/null 2>&1 || { echo "does not build: skip"; exit 125; }
	@$(GO) run ./fixtures/cmd/images -prune 0 >/dev/null 2>&1 || { echo "images do not build: skip"; exit 125; }
	@cd loadtest/scenarios && /tmp/headroom-bisect.test -test.run '$(LOADRUN)' -test.v -test.timeout 2h > /tmp/headroom-bisect.log 2>&1; rc=$$?; \
	  tail -5 /tmp/headroom-bisect.log; \
	  if grep -q 'the generator was the bottleneck' /tmp/headroom-bisect.log; then echo "invalid run: skip"; exit 125; fi; \
	  if [ $$rc -ne 0 ]; then exit 1; fi
