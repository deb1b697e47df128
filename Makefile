# Chronos: `make run` builds and starts the app, `make test` runs every test.
# Both work on a fresh machine with Go installed; what else they need (a C
# compiler for NVML's cgo, tmux for the end-to-end tests, podman for the
# container tests, an etcd server for the many-hosts tests, time zone data)
# they install. `make check` adds the linter, which it installs once.

GO       ?= go
BIN      := bin/chronos
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
# make install DESTDIR=/tmp/pkg PREFIX=/usr
PREFIX   ?= /usr/local
DESTDIR  ?=
# The linter, pinned, installed once per machine beside Go's own tools.
GOLANGCI_LINT_VERSION := v2.15.0
LINT     := $(shell $(GO) env GOPATH)/tools/golangci-lint-$(GOLANGCI_LINT_VERSION)/golangci-lint
# Coverage of every test, the real binary's runs included: make test prints it.
COVERDIR := $(CURDIR)/bin/cover
# go-nvml's headers use deprecated declarations; keep the first build quiet.
export CGO_CFLAGS += -Wno-deprecated-declarations
export CGO_ENABLED = 1

.PHONY: all build run test cover test-race-bin test-anytime test-loaded check lint vet tidy bench bench-waiters gangsim soak soak-etcd fuzz screenshots tools tools-cc clean install man

all: build

build: tools-cc
	@command -v $(GO) >/dev/null || { echo "Go is not installed: see https://go.dev/doc/install"; exit 1; }
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) .

# ARGS passes arguments: make run ARGS="list"
run: build
	./$(BIN) $(ARGS)

# The man pages, from the commands' definitions, dated by the last commit.
MANDIR   ?= bin/man
man: build
	rm -rf $(MANDIR)
	SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct 2>/dev/null || date +%s) $(BIN) gen-man $(MANDIR)

# The binary, its man pages and shell completions, this README (the unit's
# Documentation=) with docs/, and the systemd unit with its paths under PREFIX.
install: build man
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/doc/chronos $(DESTDIR)$(PREFIX)/lib/systemd/system \
	  $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/bash-completion/completions \
	  $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/chronos
	install -m 0644 $(MANDIR)/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	$(BIN) completion bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/chronos
	$(BIN) completion zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_chronos
	$(BIN) completion fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/chronos.fish
	install -m 0644 README.md $(DESTDIR)$(PREFIX)/share/doc/chronos/README.md
	install -d $(DESTDIR)$(PREFIX)/share/doc/chronos/docs
	install -m 0644 docs/*.md $(DESTDIR)$(PREFIX)/share/doc/chronos/docs/
	sed 's|/usr/local/|$(PREFIX)/|g' contrib/chronos-monitor.service > $(DESTDIR)$(PREFIX)/lib/systemd/system/chronos-monitor.service
	chmod 0644 $(DESTDIR)$(PREFIX)/lib/systemd/system/chronos-monitor.service

# test runs every test under the race detector, after vet, gofmt and the
# tidy check. The etcd tests start their own servers; here they may not
# skip. Tests that only wait (on real processes, servers, terminals) run
# side by side: more of them than there are cores. Coverage is cover's:
# counting it slows every process the tests start (the test binaries play
# roles, the real binary runs), about a tenth of the suite on 2 cores.
TESTFLAGS ?= -race -count=1 -timeout 20m -parallel 4
test: vet tidy tools
	CHRONOS_REQUIRE_ETCD=1 $(GO) test $(TESTFLAGS) ./...
	$(GO) test $(TESTFLAGS) -tags testclock ./core/clock

# cover is make test with the coverage of every test, the real binary's
# runs included, merged and printed.
cover: vet tidy tools
	rm -rf $(COVERDIR) && mkdir -p $(COVERDIR)
	CHRONOS_REQUIRE_ETCD=1 $(GO) test $(TESTFLAGS) -cover ./... -args -test.gocoverdir=$(COVERDIR)
	@echo "coverage, in-process and end-to-end tests together:"
	@$(GO) tool covdata percent -i=$(COVERDIR)

# test-race-bin is make test with the binary the end-to-end tests run
# built with the race detector too (slower: make test builds it without).
test-race-bin:
	CHRONOS_TEST_RACE_BIN=1 $(MAKE) test

# test-anytime runs the whole suite with every process's clock at 23:59:50
# on 31 December (of this year) in three zones: UTC+14, UTC-10 and
# UTC+5:45. The suite then crosses midnight, a month's and a year's end as
# it runs. The shift is the testclock build tag's (core/clock): tests only,
# never the shipped binary.
ANYTIME_ZONES ?= Pacific/Kiritimati Pacific/Honolulu Asia/Kathmandu
# The commands and the app once more, starting an hour and two hours before
# midnight: what ends an hour or two after a test starts then falls on the
# next day (the suite's first run crosses midnight within seconds).
ANYTIME_HOURS ?= 22:59:50 21:59:50
test-anytime: tools
	@for tz in $(ANYTIME_ZONES); do \
	  at=$$(TZ=$$tz date -d "$$(date +%Y)-12-31 23:59:50" +%s) && now=$$(date +%s) && \
	  echo "== the suite at $$(TZ=$$tz date -d @$$at '+%F %T %Z') ($$tz)" && \
	  TZ=$$tz CHRONOS_TEST_CLOCK_OFFSET=$$((at - now))s CHRONOS_REQUIRE_ETCD=1 \
	    $(GO) test -tags testclock -count=1 -timeout 20m -parallel 4 ./... || exit 1; \
	done
	@for hm in $(ANYTIME_HOURS); do \
	  at=$$(TZ=UTC date -d "$$(date +%Y)-12-31 $$hm" +%s) && now=$$(date +%s) && \
	  echo "== the commands and the app at $$hm UTC" && \
	  TZ=UTC CHRONOS_TEST_CLOCK_OFFSET=$$((at - now))s CHRONOS_REQUIRE_ETCD=1 \
	    $(GO) test -tags testclock -count=1 -timeout 20m -parallel 4 . ./tui || exit 1; \
	done

# test-loaded runs the whole suite 10 times back to back beside two CPU
# hogs (stress-ng): every run must pass (RUNS=3 for fewer).
RUNS ?= 10
test-loaded: tools
	@command -v stress-ng >/dev/null || $(call apt,stress-ng)
	./scripts/suite-under-load.sh $(RUNS)

# check is the gates a change must pass besides the tests: the linter, vet,
# gofmt and the tidy check. CI runs `make check test`.
check: lint vet tidy

lint: tools-cc $(LINT)
	$(LINT) run ./...

# Building the linter from source takes minutes on a small machine, once.
$(LINT):
	@echo "installing golangci-lint $(GOLANGCI_LINT_VERSION) into $(dir $(LINT)) (once; building it takes a few minutes)"
	GOBIN=$(dir $(LINT)) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

vet: tools-cc
	$(GO) vet ./...
	$(GO) vet -tags testclock ./core/clock
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

# Fails when go.mod or go.sum is not what `go mod tidy` would write.
tidy:
	$(GO) mod tidy -diff

bench: tools-cc
	$(GO) test -run '^$$' -bench . -benchmem -count 1 -timeout 30m ./...

# The issue's two hundred waiters at once: 200 real waiting processes on a
# ledger file, and laying out a line of 200 (see BENCHMARKS.md).
bench-waiters: tools-cc
	$(GO) test ./core -run '^$$' -bench 'Waiters200|LineLayout200' -benchtime 1x -count 1 -timeout 30m

# Issue 23's simulated weeks: twenty seeded weeks of a lab's 1-, 2-, 4-
# and 8-GPU jobs through the real waiting line and two baselines (see
# BENCHMARKS.md); about a minute. WEEKS=1 for one.
WEEKS ?= 20
gangsim: tools-cc
	$(GO) run ./scripts/gangsim -weeks $(WEEKS)

soak: build
	$(GO) run ./scripts/soak -bin $(BIN)

# The same soak on a ledger on a local three-member etcd cluster. Its expiry
# grace is 2 s: each etcd transaction is a few network round trips, and on a
# saturated 2-core machine a monitor's pass waits on them.
soak-etcd: build tools
	$(GO) run ./scripts/soak -bin $(BIN) -etcd 3 -expiry-grace 2s

fuzz:
	@for pkg in ./core ./storage/bolt ./storage/etcd ./gpu; do \
	  for t in $$($(GO) test -list '^Fuzz' $$pkg | grep ^Fuzz); do \
	    echo "== $$t ($$pkg)"; $(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $${FUZZTIME:-30s} $$pkg || exit 1; done; done

screenshots: build tools
	./scripts/screenshots.sh $(BIN)

# tools installs what the tests use, when it is missing and we may install.
# podman, runc and a static busybox run the real-container tests (gpu/),
# which are skipped where they cannot be installed.
tools: tools-cc
	@command -v tmux >/dev/null || $(call apt,tmux)
	@command -v flock >/dev/null || $(call apt,util-linux)
	@command -v etcd >/dev/null || test -x /usr/bin/etcd || test -n "$$CHRONOS_ETCD" || $(call apt,etcd-server)
	@test -e /usr/share/zoneinfo/Pacific/Kiritimati || $(call apt,tzdata)
	@{ command -v podman && command -v runc && test -x /bin/busybox; } >/dev/null || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && apt-get update -qq >/dev/null && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc busybox-static >/dev/null; } || \
	  echo "podman, runc or busybox-static missing: the real-container tests will be skipped"

tools-cc:
	@command -v gcc >/dev/null || command -v cc >/dev/null || $(call apt,gcc libc6-dev)

apt = { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
          apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(1) >/dev/null; \
        else echo "please install: $(1)"; exit 1; fi; }

clean:
	rm -rf bin
