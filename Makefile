# shoal -- build, run, test, benchmark.
#
#   make build                 bin/shoal-server (static, CGO_ENABLED=0)
#   make run [PORT=7379]       one standalone node in the foreground, --dir $(DIR)
#   make cluster               3 masters + 3 replicas on 127.0.0.1:7000-7005 via redis-cli --cluster create
#                              (CLUSTER_BASE_PORT, CLUSTER_NODES...; stop: scripts/cluster.sh stop)
#   make test                  vet, race tests, a short fuzz run, the Redis tcl units, the pipe check
#                              (sized for a loaded 2-core machine: GOTEST_TIMEOUT per package,
#                              test deadlines stretched by SHOAL_TEST_SLACK)
#   make test-short            go test -short -race (no multi-node clusters, no 50-node gossip) and
#                              TEST_SHORT_UNITS of the tcl suite: a few minutes
#   make tcl [TCL_UNITS=...]   Redis 7.0.15's own tcl units against a fresh bin/shoal-server each
#   make tcl-cluster [CLUSTER_TESTS=...]  Redis 7.0.15's tests/cluster suite (20 instances per file) against
#                              bin/shoal-server, files by name or number (default: all 31: 17 min on the shared 2-core VM)
#   make pipe-test             1M SETs through redis-cli --pipe + redis-benchmark, no errors allowed
#   make bench                 shoal vs redis-server with ../shared/bench (REPEATS, PLAN, KEYS... pass through)
#                              and SET -P 16 under maxmemory, every write evicting (scripts/bench-evict.sh),
#                              and SET -P 16 with the AOF on (scripts/bench-aof.sh)
#   make evict-compare         shoal vs redis-server at maxmemory 16mb: hot-set survival under allkeys-lru/lfu,
#                              memory, RSS, CPU/request, noeviction's refusal (scripts/evictcompare; ~80 s;
#                              EVICT_ARGS="-policies allkeys-lru -pause 0" etc. pass through)
#   make fmt / make lint       gofmt -l check (lint adds go vet); `gofmt -w .` fixes formatting
#   make image [IMAGE=...]     FROM-scratch Docker image of a stripped static shoal-server (deploy/README.md);
#                              no base image is pulled
#
# Scripts honour SHOAL_SERVER=/path (e.g. /usr/bin/redis-server to check the checks themselves).

GO        ?= go
# not 6379: Debian's redis-server service (installed for the tests) listens there
PORT      ?= 7379
DIR       ?= /tmp/shoal-$(PORT)
# Fuzz budgets are counts of executions (about 30 s each on this machine kind), not durations:
# with a duration, go1.26's fuzzing coordinator can report its own deadline as a failure
# ("context deadline exceeded", no failing input) when a starved worker is mid-input as the time
# runs out (golang/go#75804, fixed in go1.27). A count has no deadline to race.
FUZZ_READER_EXECS  ?= 300000x
FUZZ_REQUEST_EXECS ?= 50000x
TCL_UNITS ?= unit/keyspace unit/dump unit/type/string unit/type/incr unit/expire unit/protocol unit/info-command unit/querybuf unit/slowlog unit/introspection-2 unit/type/list unit/type/list-2 unit/type/list-3 unit/type/hash unit/type/set unit/type/zset unit/bitops unit/bitfield unit/hyperloglog unit/geo unit/sort unit/type/stream unit/type/stream-cgroups unit/multi unit/scripting unit/functions unit/pubsub unit/pubsubshard unit/obuf-limits unit/client-eviction unit/maxmemory unit/tracking unit/aofrw integration/aof integration/replication-2 integration/replication-3 integration/replication-4 integration/block-repl unit/introspection unit/latency-monitor unit/networking unit/shutdown unit/oom-score-adj integration/rdb unit/info unit/other integration/failover unit/acl unit/acl-v2 unit/auth
# make test-short's tcl units: quick ones (a second or two each)
TEST_SHORT_UNITS ?= unit/type/incr unit/keyspace unit/protocol
# go test's limit per package binary: ./node and ./integration run for many minutes when the two
# cores are shared with other work (the 20m limit was hit with two CPU-bound processes beside it)
GOTEST_TIMEOUT ?= 60m
# Deadlines of the tests' waits (internal/testharness: WaitFor...) are multiplied by this: they
# bound waiting for a condition, not speed, so a loaded machine may stretch them freely.
SHOAL_TEST_SLACK ?= 3
export SHOAL_TEST_SLACK
# a hung unit must not eat the CI budget (units take 0-12 s against Redis)
TCL_UNIT_TIMEOUT ?= 180
export TCL_UNIT_TIMEOUT

BIN := bin/shoal-server
# The commit the binary is built from: --version, INFO server's redis_git_sha1/redis_git_dirty and
# redis_build_id (internal/buildinfo; a plain `go build` falls back to Go's VCS stamp, if any).
# GIT_DIRTY counts changed lines, as Redis's mkreleasehdr.sh does.
GIT_SHA1  ?= $(shell git rev-parse --short=8 HEAD 2>/dev/null)
GIT_DIRTY ?= $(strip $(shell git diff --no-ext-diff 2>/dev/null | wc -l))
BUILDINFO := github.com/shoal-db/shoal/internal/buildinfo
# runtime.godebugDefault=memprofilerate=0: heap profile sampling off from the runtime's first
# allocation (main's init turns it off too, but only after every package's init has allocated: one
# sample was enough to map the profiler's 1.4 MB bucket table). GODEBUG=memprofilerate=N still wins.
LDFLAGS   := -X $(BUILDINFO).gitSHA1=$(GIT_SHA1) -X $(BUILDINFO).gitDirty=$(GIT_DIRTY) \
             -X runtime.godebugDefault=memprofilerate=0
# with SHOAL_SERVER=/path the scripts test that binary: no need to build ours
SERVER_DEP := $(if $(SHOAL_SERVER),,build)

.PHONY: build run cluster test test-short vet gotest gotest-scale fuzz tcl tcl-cluster pipe-test bench evict-compare fmt lint image

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='$(LDFLAGS)' -o $(BIN) ./cmd/shoal-server

# The image's build context: the binary (stripped: -s -w) and an empty /data,
# both owned by the image's user through COPY --chown (deploy/Dockerfile).
IMAGE     ?= shoal-server:latest
IMAGE_CTX := bin/image
image:
	rm -rf $(IMAGE_CTX) && mkdir -p $(IMAGE_CTX)/rootfs/data
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w $(LDFLAGS)' -o $(IMAGE_CTX)/rootfs/shoal-server ./cmd/shoal-server
	cp deploy/Dockerfile $(IMAGE_CTX)/Dockerfile
	docker build -t $(IMAGE) $(IMAGE_CTX)
	@ls -l $(IMAGE_CTX)/rootfs/shoal-server | awk '{print "binary: " $$5 " bytes"}'
	@docker image inspect $(IMAGE) --format 'image $(IMAGE): {{.Size}} bytes'

run: build
	mkdir -p $(DIR)
	$(BIN) --port $(PORT) --bind 127.0.0.1 --dir $(DIR)

cluster: $(SERVER_DEP)
	scripts/cluster.sh start

test: vet gotest fuzz $(SERVER_DEP)
	scripts/tcl-suite.sh $(TCL_UNITS)
	scripts/pipe-test.sh

# The quick tier: what a change should pass before make test.
test-short: $(SERVER_DEP)
	$(GO) test -short -race -count=1 -timeout 20m ./...
	scripts/tcl-suite.sh $(TEST_SHORT_UNITS)

vet:
	$(GO) vet ./...

gotest:
	$(GO) test -race -count=1 -timeout $(GOTEST_TIMEOUT) ./...
	$(MAKE) gotest-scale

# Scale tests skip themselves under -race (50 buses in one process: several GB and more CPU than
# a shared 2-core machine has with the race detector); they run here without it.
SCALE_TESTS ?= TestBusFiftyNodesConverge
gotest-scale:
	$(GO) test -count=1 -timeout $(GOTEST_TIMEOUT) -run '^($(SCALE_TESTS))$$' ./gossip

# Two fuzz targets: the request reader alone (resp, differential: one read vs
# small reads) and the whole request path of a server (node: reader, dispatcher, handlers, replies).
fuzz:
	$(GO) test ./resp -run '^$$' -fuzz '^FuzzRequestReader$$' -fuzztime $(FUZZ_READER_EXECS)
	$(GO) test ./node -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime $(FUZZ_REQUEST_EXECS)

tcl: $(SERVER_DEP)
	scripts/tcl-suite.sh $(TCL_UNITS)

# the suite spawns up to 20 instances per file from src/redis-server (a wrapper that execs shoal-server).
tcl-cluster: $(SERVER_DEP)
	scripts/tcl-cluster.sh $(CLUSTER_TESTS)

pipe-test: $(SERVER_DEP)
	scripts/pipe-test.sh

bench: build
	scripts/bench.sh
	scripts/bench-types-memory.sh
	scripts/bench-scripting.sh
	scripts/bench-replication.sh
	scripts/bench-cluster.sh
	scripts/bench-migrate.sh

# SHOAL_SERVER/REDIS_SERVER pick the binaries (default bin/shoal-server, /usr/bin/redis-server)
evict-compare: $(SERVER_DEP)
	$(GO) run ./scripts/evictcompare $(EVICT_ARGS)

fmt:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then \
		echo "gofmt needed (run: gofmt -w .) on:"; echo "$$out"; exit 1; \
	else echo "gofmt: ok"; fi

lint: fmt
	$(GO) vet ./...
