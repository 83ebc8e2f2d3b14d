# Ebbflow build, test and demo entry points. Every target installs what it needs.
SHELL := /usr/bin/env bash -o pipefail
GO ?= go
BIN := bin
CACHE := .cache
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CACHE)/tools/staticcheck-$(STATICCHECK_VERSION)/staticcheck
FUZZTIME ?= 30s
UNIT_PKGS := ./adapter/... ./autoscaler/... ./cli/... ./cmd/... ./hack/... ./internal/... ./dashboards/... ./test/fakeapp/... ./test/proc/... ./test/poll/... ./test/coverfiles/... ./test/certs/... ./test/resourcerules/... ./test/metricsstub/... ./test/benchcluster/... ./test/adapterbench/... ./test/sampleapp/... ./test/loadgen/... ./test/buildtools/... ./test/backgroundcpu/...
INTEGRATION_PKGS := ./test/integration/... ./test/promtest/... ./test/exporter/... ./test/forecastbench/... ./test/adaptertest/... ./test/storetest/...

.PHONY: verify-gofmt e2e-tools test-e2e-packages test-stream-e2e test-stream-checks verify-codegen verify-manifests verify-chart all build image verify-images test test-unit test-integration test-e2e test-k8s-e2e fuzz bench bench-cluster bench-adapter bench-sync-periods bench-forecast-cost bench-reaction bench-zero-reaction bench-failover test-stores bench-forecast bench-forecast-heldout soak demo demo-fake-nodes clean-node verify deps tools clean

all: build

## build: compile ebbflow-adapter, ebbflow-autoscaler, ebbflow and the kubectl plugin kubectl-ebbflow (./cmd/...) into bin/
build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -o $(BIN)/ ./cmd/...

## image: OCI image tarballs of ebbflow-adapter, ebbflow-autoscaler and ebbflow (linux/amd64, linux/arm64) in _output/images, no Docker or registry needed (IMAGE_FLAGS="--tag v0.1.0 --repository ghcr.io/you"; see docs/images.md)
IMAGE_FLAGS ?=
image:
	$(GO) run ./hack/image --output _output/images $(IMAGE_FLAGS)

## verify-images: the three images for both platforms built at HEAD here (Go build cache as is) and in a fresh clone at another path with an empty GOCACHE, every digest compared (index, manifests, configs, layers); refuses a tree with uncommitted changes; long: a cold build of both platforms (see docs/images.md)
verify-images:
	$(GO) run ./hack/image --reproduce $(IMAGE_FLAGS)

## test: everything CI runs: static checks, manifests, unit tests (race, fuzz seeds), integration and end-to-end tests; two streams side by side: the end-to-end tools then packages, and the rest in a low-weight CPU cgroup (TEST_STREAMS=1: one after another; docs/development.md)
# TEST_STREAMS=2 (the default): once gofmt has passed, two streams side by
# side: the end-to-end tools and then the end-to-end packages, and the
# manifests, unit tests, static checks and integration tests in a CPU cgroup
# of their own with a low weight (hack/background-cpu.sh: they get the CPU
# the tool builds, the end-to-end tests and the real node's pods leave over;
# nice does not do that, the pods are a cgroup of their own). On a fresh
# machine the checks so fill what the tool builds leave idle (downloads,
# links). They begin with the race unit tests, vet, staticcheck and codegen,
# which need none of the end-to-end tools, and come to Helm and Prometheus 3
# (verify-chart, test-integration) after the other stream has built them:
# hack/build-tools.sh builds a tool once at a time, and the other stream
# should not wait on a low-weight build of one. Each line says
# its stream ("e2e|", "checks|"). TEST_STREAMS=1: the end-to-end tools first,
# then one stage after another.
TEST_STREAMS ?= 2
test: verify-gofmt
ifeq ($(TEST_STREAMS),1)
	$(MAKE) --no-print-directory e2e-tools verify verify-manifests verify-chart test-unit test-integration test-e2e-packages
else
	$(MAKE) --no-print-directory -j2 test-stream-e2e test-stream-checks
endif

# The tools build at nice 0 here (hack/build-tools.sh's default is nice 10):
# at nice 10 a build process weighs 110 against the checks' whole group's
# 128, and the checks took half the CPU from the Kubernetes build (11 min
# 14 s against 6-7 min on a fresh machine).
test-stream-e2e:
	{ EBBFLOW_TOOLS_NICE=$${EBBFLOW_TOOLS_NICE:-0} $(MAKE) --no-print-directory e2e-tools test-e2e-packages; \
	  rc=$$?; echo "stream CPU, user and system (the stream's shell, then all it ran):"; times; exit $$rc; } 2>&1 | sed -u 's/^/e2e| /'

test-stream-checks:
	hack/background-cpu.sh bash -c 'rc=0; for goal in test-unit verify verify-manifests verify-chart test-integration; do \
	  $(MAKE) --no-print-directory $$goal || { rc=$$?; break; }; \
	done; echo "stream CPU, user and system (the stream'"'"'s shell, then all it ran):"; times; exit $$rc' 2>&1 | sed -u 's/^/checks| /'

## test-unit: unit tests with the race detector; fuzz targets run their seed corpus; the guards on the files one evaluation (issue 21) and one adapter request (issue 30) run through
test-unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)
	$(GO) test -tags evalfiles -count=1 -run '^TestEvaluationFiles$$' ./autoscaler/controller/
	$(GO) test -tags requestfiles -count=1 -run '^TestRequestFiles$$' ./adapter/server/

## test-integration: tests against a real Prometheus (Debian's, installed if missing, and Prometheus 3 built by hack/build-tools.sh prometheus3) and behind it Grafana Mimir and VictoriaMetrics (test/storetest: one 5 s kill each)
test-integration: deps
	hack/build-tools.sh prometheus3 mimir victoria-metrics && $(GO) test -count=1 -timeout 15m $(INTEGRATION_PKGS)

## test-stores: ebbflow-adapter in front of Grafana Mimir and VictoriaMetrics fed by Prometheus' remote write (test/storetest), each store killed STORE_KILLS times (default 5) for STORE_OUTAGE (default 20s) under load, Mimir with its default Retry-After bound (96 s); log in _output/bench/ (see docs/stores.md, docs/benchmarks.md)
STORE_KILLS ?= 5
STORE_OUTAGE ?= 20s
test-stores:
	@mkdir -p _output/bench
	hack/deps.sh prometheus3 mimir victoria-metrics && EBBFLOW_STORE_KILLS=$(STORE_KILLS) EBBFLOW_STORE_OUTAGE=$(STORE_OUTAGE) EBBFLOW_STORE_MIMIR_DEFAULTS=1 $(GO) test -count=1 -timeout 30m -v ./test/storetest/ 2>&1 | tee _output/bench/stores-$$(date -u +%Y%m%dT%H%M%SZ).log

## fuzz: run each fuzz target for FUZZTIME (default 30s)
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./adapter/rulefile/
	$(GO) test -run '^$$' -fuzz '^FuzzParseBackends$$' -fuzztime $(FUZZTIME) ./adapter/rulefile/
	$(GO) test -run '^$$' -fuzz '^FuzzSelectorQuery$$' -fuzztime $(FUZZTIME) ./adapter/rules/
	$(GO) test -run '^$$' -fuzz '^FuzzCanName$$' -fuzztime $(FUZZTIME) ./adapter/rules/
	$(GO) test -run '^$$' -fuzz '^FuzzParseSelector$$' -fuzztime $(FUZZTIME) ./adapter/rules/
	$(GO) test -run '^$$' -fuzz '^FuzzHistorySelector$$' -fuzztime $(FUZZTIME) ./adapter/rules/
	$(GO) test -run '^$$' -fuzz '^FuzzMetricsPath$$' -fuzztime $(FUZZTIME) ./adapter/server/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeVector$$' -fuzztime $(FUZZTIME) ./adapter/prom/
	$(GO) test -run '^$$' -fuzz '^FuzzParseJSON$$' -fuzztime $(FUZZTIME) ./autoscaler/proportional/
	$(GO) test -run '^$$' -fuzz '^FuzzForecast$$' -fuzztime $(FUZZTIME) ./autoscaler/forecast/
	$(GO) test -run '^$$' -fuzz '^FuzzBacktest$$' -fuzztime $(FUZZTIME) ./autoscaler/forecast/

## bench: benchmarks; results go to _output/bench/ (see docs/benchmarks.md)
bench:
	hack/bench.sh

## bench-forecast: the traces of EBBFLOW_TRACES (default /work/shared/traces) backfilled into a real Prometheus and replayed: reactive HPA, forecasts, oracle; table in _output/bench/ (see docs/benchmarks.md)
bench-forecast: deps
	@mkdir -p _output/bench
	out=_output/bench/forecast-$$(date -u +%Y%m%dT%H%M%SZ).md; EBBFLOW_FORECAST_BENCH_OUT=$$PWD/$$out $(GO) test -tags forecastbench -count=1 -timeout 60m -v -run '^TestForecastBenchFull$$' ./test/forecastbench/ && echo "table in $$out"

## bench-forecast-heldout: the held-out traces of test/forecastbench/testdata/traces replayed straight from their grid (walk-forward: training span, then test span): reactive frontier, Ebbflow's forecast and the peers (Crane EHPA DSP, PHPA Holt-Winters and linear, AWS-style predictive); tables in _output/bench/
bench-forecast-heldout:
	@mkdir -p _output/bench
	out=_output/bench/forecast-heldout-$$(date -u +%Y%m%dT%H%M%SZ).md; EBBFLOW_FORECAST_BENCH_OUT=$$PWD/$$out $(GO) test -tags forecastbench -count=1 -timeout 60m -v -run '^TestForecastHeldOut$$' ./test/forecastbench/ && echo "table in $$out"

## bench-cluster: kube-controller-manager's HPA controller and ebbflow-autoscaler (drop-in) one after the other on the local cluster against a 100 ms external metrics API; report in _output/bench/ (EBBFLOW_BENCH_N, _WORKERS, _VARIANTS, _WINDOW, _CONTROLLERS, _SETUP_QPS; see docs/benchmarks.md)
bench-cluster:
	@mkdir -p _output/bench
	hack/build-tools.sh && hack/install-prometheus.sh && $(GO) test -tags benchcluster -count=1 -timeout 100m -v -run '^TestBenchCluster$$' ./test/benchcluster/ 2>&1 | tee _output/bench/cluster-$$(date -u +%Y%m%dT%H%M%SZ).log

## bench-adapter: ebbflow-adapter and prometheus-adapter v0.12.0 (built on request) one after the other behind kube-apiserver on one local cluster, the same rule file and 1,000 pods: latency of a `*` and a one-pod Pods request through kube-apiserver and direct, throughput with 8 clients, peak RSS, Prometheus' and the adapter's share; report in _output/bench/ (EBBFLOW_ADAPTER_BENCH_PODS, _N, _CLIENTS, _WINDOW; see docs/benchmarks.md)
bench-adapter:
	@mkdir -p _output/bench
	hack/build-tools.sh && hack/deps.sh prometheus-adapter && out=_output/bench/adapter-$$(date -u +%Y%m%dT%H%M%SZ).md; EBBFLOW_ADAPTER_BENCH_OUT=$$PWD/$$out $(GO) test -tags adapterbench -count=1 -timeout 20m -v -run '^TestAdapterBench$$' ./test/adapterbench/ && echo "report in $$out"

## bench-forecast-cost: what forecasting costs at EBBFLOW_FORECAST_COST_N (default 1000) Autoscalers on the local cluster, each on its own External metric with a week of backfilled daily history: autoscaler, adapter and Prometheus CPU, the autoscaler's memory and the Prometheus reads, the metric alone against a daily forecast with its hourly self-check (warm-up and steady); report in _output/bench/ (see docs/benchmarks.md)
bench-forecast-cost:
	@mkdir -p _output/bench
	hack/build-tools.sh && hack/install-prometheus.sh && $(GO) test -tags benchcluster -count=1 -timeout 90m -v -run '^TestBenchForecastCost$$' ./test/benchcluster/ 2>&1 | tee _output/bench/forecast-cost-$$(date -u +%Y%m%dT%H%M%SZ).log

## bench-sync-periods: what per-autoscaler sync periods cost on the local cluster: EBBFLOW_PERIODS_N Autoscalers (default 300) split across EBBFLOW_PERIODS (default 5s,15s,60s), each on its own External metric through ebbflow-adapter; metric reads/s, kube-apiserver requests/s and CPU against Σ 1/period; report in _output/bench/ (see docs/benchmarks.md)
bench-sync-periods:
	@mkdir -p _output/bench
	hack/build-tools.sh && hack/install-prometheus.sh && $(GO) test -tags benchcluster -count=1 -timeout 45m -v -run '^TestBenchSyncPeriods$$' ./test/benchcluster/ 2>&1 | tee _output/bench/sync-periods-$$(date -u +%Y%m%dT%H%M%SZ).log

## bench-reaction: ClusterProportional reaction time on the local cluster (node added/deleted → /scale written; EBBFLOW_REACTION_EVENTS=30)
bench-reaction:
	hack/build-tools.sh && hack/install-prometheus.sh && $(GO) test -count=1 -timeout 20m -run '^$$' -bench '^BenchmarkProportionalReaction$$' -benchtime 1x ./test/e2e/

## bench-zero-reaction: time from a message on an empty queue to the first /scale write from zero, on the local cluster (EBBFLOW_REACTION_TRIALS, default 20); log in _output/bench/ (see docs/benchmarks.md)
bench-zero-reaction:
	@mkdir -p _output/bench
	hack/build-tools.sh && hack/install-prometheus.sh && $(GO) test -tags reaction -count=1 -timeout 30m -v -run '^TestReactionFromZero$$' ./test/e2e/ | tee _output/bench/zero-reaction-$$(date -u +%Y%m%dT%H%M%SZ).txt

## bench-failover: leader failover of ebbflow-autoscaler on the local cluster: SIGKILL of the leader mid-ramp, EBBFLOW_FAILOVERS times (default 10); p50/max takeover; log in _output/bench/ (see docs/benchmarks.md)
bench-failover:
	@mkdir -p _output/bench
	hack/build-tools.sh && hack/install-prometheus.sh && $(GO) test -tags failover -count=1 -timeout 60m -v -run '^TestFailoverBench$$' ./test/e2e/ | tee _output/bench/failover-$$(date -u +%Y%m%dT%H%M%SZ).txt

## soak: ebbflow-adapter under 200 requests/s through kube-apiserver with rule reloads and a Prometheus restart, SOAK_DURATION (default 5m; make test runs 30s); report in _output/bench/ (see docs/benchmarks.md)
SOAK_DURATION ?= 5m
soak:
	@mkdir -p _output/bench
	hack/build-tools.sh && hack/install-prometheus.sh && EBBFLOW_SOAK_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -timeout 2h -v -run '^TestAdapterSoak$$' ./test/e2e/ | tee _output/bench/soak-$$(date -u +%Y%m%dT%H%M%SZ).txt

## demo: as root, the real thing on the local cluster's real node: the chart installed with helm from the images, the sample app under real HTTP load, an HPA and an ebbflow Autoscaler side by side, explain, dry-run, a worker to zero and back; plot in _output/demo/ (DEMO_FLAGS="--duration 2m"; DEMO_FLAGS=--fake-nodes for kwok's fake nodes without root)
DEMO_FLAGS ?=
# the tools of a cluster with a real node (test/cluster, Options.RealNode)
REAL_NODE_TOOLS := kube-apiserver kube-controller-manager kubectl etcd kube-scheduler kubelet kube-proxy
ifneq (,$(findstring --fake-nodes,$(DEMO_FLAGS)))
DEMO_DEPS := hack/build-tools.sh && hack/install-prometheus.sh
else
DEMO_DEPS := { [ "$$(id -u)" = 0 ] || { echo "make demo needs root (the real node: containerd, the kubelet, the pod network): run sudo make demo, or make demo-fake-nodes"; exit 1; }; } && \
	hack/deps.sh --node --no-prometheus2 $(REAL_NODE_TOOLS) helm prometheus3
endif
# The demo, its adapter and images are built with the flags of the images
# (static, -trimpath), so that a cold machine compiles their libraries once.
# The demo is built, then exec'd by the recipe's shell, so that a SIGTERM
# make forwards (or a Ctrl-C) reaches the demo itself, which tears down as
# at a normal exit (go run would die and leave it running).
demo:
	$(DEMO_DEPS)
	CGO_ENABLED=0 $(GO) build -trimpath -o _output/bin/demo ./hack/demo && exec _output/bin/demo $(DEMO_FLAGS)

## clean-node: as root, sweep what a real-node run that died left on the machine (processes, pods, mounts, cgroups, its kube-proxy rules, the pod network, kernel settings) when its watchdog could not; never touches a live run (docs/real-node.md)
clean-node:
	@[ "$$(id -u)" = 0 ] || { echo "make clean-node needs root"; exit 1; }
	CGO_ENABLED=0 $(GO) run -trimpath ./hack/clean-node

## demo-fake-nodes: the earlier demo without root: kwok's fake nodes, manifests/examples and simulated traffic (make demo DEMO_FLAGS=--fake-nodes)
demo-fake-nodes:
	hack/build-tools.sh && hack/install-prometheus.sh
	CGO_ENABLED=0 $(GO) run -trimpath ./hack/demo --fake-nodes $(DEMO_FLAGS)

## test-e2e: end-to-end tests on the local cluster (test/cluster): kube-apiserver, kube-controller-manager, kwok, Prometheus (and an HA pair behind Thanos Query), ebbflow-adapter; the images in a private containerd (test/imagetest), the arm64 binaries under qemu-user-static; then the real node (kubelet, containerd) with the chart installed from the images (test/realnode, docs/real-node.md) and make demo interrupted by a Ctrl-C and a SIGTERM (test/demotest); the fast subset of Kubernetes' own HPA e2e tests against drop-in mode (test/k8se2e, docs/k8s-e2e.md)
# One go test run: ./test/e2e/... (the longest package) starts first and the
# others share the second package slot beside it (-p is the CPU count);
# -parallel 4 lets the e2e tests that wait on their own cluster (forecasts,
# schedules) overlap.
# The packages that take the real node's lock (test/k8se2e, test/realnode,
# test/cluster's TestRealNode*, test/demotest) run one after another whatever
# the order, so the longest of them starts at once beside test/e2e.
E2E_PKGS := ./test/e2e/ ./test/k8se2e/... ./test/realnode/... ./test/cluster/... ./test/demotest/... ./test/e2e/thanos/... ./test/imagetest/... ./test/thanostest/...
E2E_TEST = $(GO) test -count=1 -timeout 60m -parallel 4 $(E2E_PKGS)
test-e2e: e2e-tools
	$(E2E_TEST)

# the tools, Debian's packages and qemu-user-static the end-to-end tests run
# (prometheus-adapter: test/e2e's upstream test runs the real one)
e2e-tools:
	hack/deps.sh --node $(REAL_NODE_TOOLS) kwok helm thanos prometheus3 k8s-e2e prometheus-adapter
	hack/install-qemu-user.sh

test-e2e-packages:
	$(E2E_TEST)

## test-k8s-e2e: as root, Kubernetes v1.37.2's own HPA e2e tests ([sig-autoscaling] [Feature:HPA], test/e2e/autoscaling/horizontal_pod_autoscaling*.go; e2e.test and its images built from the Go module proxy) on the real node against ebbflow-autoscaler in drop-in mode, then against kube-controller-manager's HPA; side-by-side report in _output/k8se2e/report.md (K8S_E2E_FLAGS=--fast: the subset test-e2e runs; docs/k8s-e2e.md)
K8S_E2E_FLAGS ?=
test-k8s-e2e:
	@[ "$$(id -u)" = 0 ] || { echo "make test-k8s-e2e needs root (the real node)"; exit 1; }
	hack/deps.sh --node $(REAL_NODE_TOOLS) helm prometheus3 k8s-e2e
	CGO_ENABLED=0 $(GO) build -trimpath -o _output/bin/k8se2e ./hack/k8se2e && exec _output/bin/k8se2e $(K8S_E2E_FLAGS)

## verify: gofmt, go vet (the benchmarks behind build tags too), staticcheck, generated code up to date
# The packages with files behind a build tag that make test does not run
# (benchmarks, the failover and reaction timelines): go vet compiles them
# with their tags, so a change that stops them building fails here.
TAGGED_TAGS := adapterbench,forecastbench,benchcluster,reaction,failover
TAGGED_PKGS := ./test/adapterbench/ ./test/forecastbench/ ./test/benchcluster/ ./test/e2e/
verify: verify-gofmt $(STATICCHECK) verify-codegen
	$(GO) vet ./...
	$(GO) vet -tags $(TAGGED_TAGS) $(TAGGED_PKGS)
	$(STATICCHECK) ./...

verify-gofmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

$(STATICCHECK):
	@mkdir -p $(dir $@)
	GOBIN=$(abspath $(dir $@)) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

## verify-codegen: deepcopy, clientset/listers/informers and the Autoscaler CRD match the API types
verify-codegen:
	hack/verify-codegen.sh

## verify-manifests: every kustomize base renders (kustomize pinned in hack/tools)
verify-manifests:
	@kustomize=$$(hack/build-tools.sh --print-paths kustomize | sed -n 's/^KUSTOMIZE=//p'); \
	for base in $$(ls -d manifests/*/ | sed 's#/$$##'); do \
	  [ -f $$base/kustomization.yaml ] || continue; \
	  echo "kustomize build $$base"; $$kustomize build $$base > /dev/null || exit 1; \
	done

## verify-chart: helm lint and the chart tests (value sets, parity with manifests/, prometheus-adapter values); Helm pinned in hack/tools/helm
verify-chart:
	@helm=$$(hack/build-tools.sh --print-paths helm kustomize | sed -n 's/^HELM=//p') && [ -n "$$helm" ] || exit 1; \
	echo "helm lint --strict charts/ebbflow"; $$helm lint --strict charts/ebbflow
	$(GO) test -count=1 ./test/chart/...

## deps: system packages the tests need (Prometheus from Debian)
deps:
	hack/install-prometheus.sh

clean:
	rm -rf $(BIN) _output
