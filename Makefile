# make test   the tests of every package (go test ./...), verbose, into a
#             log; then each package's ok or FAIL line, and every skipped
#             test with the reason it gave. The exit status is go test's.
#             Set CONSENT_TEST_POSTGRES_URL to run the PostgreSQL tests.
# make race   the same under the race detector, as CI runs them
# make lint   golangci-lint with .golangci.yml (installs the pinned version)
# make fuzz   every fuzz target for CONSENTKIT_FUZZTIME (default 10s) each
# make ci     everything CI runs (.ci/run): it installs the tools, starts
#             PostgreSQL, and fails when any test was skipped
#
# TESTFLAGS adds flags to go test: make test TESTFLAGS='-run Wallet -count=1'

GO ?= go
TESTFLAGS ?=

.PHONY: test race lint fuzz ci

test:
	@$(call gotest,$(TESTFLAGS))

# A package waits as long as -timeout allows: go test's default of 10
# minutes is too close under -race on a busy two-core machine (.ci/run).
race:
	@$(call gotest,-race -timeout 25m $(TESTFLAGS))

lint:
	@bash .ci/lint

fuzz:
	@bash .ci/fuzz

ci:
	@bash .ci/run

# gotest runs go test -v with the flags $(1) over every package into a log
# that it keeps, prints the packages' ok and FAIL lines (and failed tests
# and panics), lists the skipped tests (.ci/skipped), and exits with go
# test's status.
define gotest
log=$$(mktemp "$${TMPDIR:-/tmp}/consentkit-test.XXXXXX"); status=0; \
$(GO) test -v $(1) ./... >"$$log" 2>&1 || status=$$?; \
grep -E '^((ok|FAIL)\s|panic:|\s*--- FAIL)' "$$log" || true; \
bash .ci/skipped "$$log"; \
echo "go test's whole output: $$log"; \
if [ $$status -ne 0 ]; then echo "go test failed (exit $$status)"; fi; \
exit $$status
endef
