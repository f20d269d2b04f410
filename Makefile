# svcnet developer entry points. Every target that touches netfilter runs inside throwaway network namespaces.
CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: build test lint fmt bench demo e2e e2e-lab crds crds-check manifests manifests-check images golden k8s deps

build:
	$(CARGO) build --workspace --locked

# System tools a fresh machine lacks (iptables, iproute2, conntrack, nfacct, nftables, util-linux, make):
# installed with apt-get when missing, a no-op otherwise. demo, test and e2e run it first.
deps:
	bash testing/install-deps.sh

# The test command (README.md and .ci/run call exactly this).
test: deps
	$(CARGO) test --workspace --locked

# The real control plane (etcd, kube-apiserver, kube-controller-manager, kube-proxy) from the pinned Go
# recipe in testing/k8s, built once per machine into a cache outside the repo (SVCNET_K8S_CACHE, default
# /var/cache/svcnet). Tests that need it call the same script lazily, so `make test` works without this.
k8s:
	bash testing/k8s/build.sh

# Regenerate the proxy's golden payloads after an intended rule change; review the diff before committing.
golden:
	SVCNET_UPDATE_GOLDEN=1 $(CARGO) test -p svcnet-proxy --test golden --locked

# cargo-deny's licence and ban checks (deny.toml), fmt and clippy. cargo-deny runs `cargo metadata`, which
# needs every crate in Cargo.lock, other platforms' too, while builds download only the host's: `cargo fetch`
# brings them all (from the registry, as Cargo.lock pins them), then the check itself runs offline. The
# advisory database cannot be fetched on these machines, so that check is not run. The quick checks go
# first, so a bad licence or format fails before clippy's build. cargo-deny is built once when missing.
# Every workspace crate's src/ also passes testing/layers.py (no import cycles, no file of 400 lines or
# function of 80, a doc line per file, no import its declared `//! Never imports:` rules forbid).
CRATES := $(shell sed -n '/^members = \[/,/^\]/s/^ *"\([^"]*\)",*$$/\1/p' Cargo.toml)
lint:
	bash testing/install-cargo-deny.sh
	$(CARGO) fetch --locked
	$(CARGO) deny --offline --locked check licenses bans
	$(CARGO) fmt --all -- --check
	for c in $(CRATES); do printf 'layers %s: ' $$c; python3 testing/layers.py $$c/src || exit 1; done
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

fmt:
	$(CARGO) fmt --all

bench:
	$(CARGO) run -p svcnet-bench --release --locked -- $(BENCH_ARGS)

# The local lab (needs root: network namespaces). `make demo` replays the GKE Service walkthrough and tears
# the lab down at the end (LAB_DIR holds its state; `svcnet-lab --dir $(LAB_DIR) down` cleans up after a crash).
LAB_DIR ?= /tmp/svcnet-lab
LAB_BINS = -p svcnet-lab -p svcnet-fake-gce -p svcnet-proxy -p svcnet-cloud-controller
LAB = $(CARGO) run -q --locked -p svcnet-lab -- --dir $(LAB_DIR)
demo: deps
	$(CARGO) build --locked $(LAB_BINS)
	trap '$(LAB) down >/dev/null 2>&1' INT TERM; $(LAB) demo

# svcnet on kind with the fake GCE (e2e/kind/README.md; root): a container engine in a network namespace
# of its own, a 3-node kind cluster made with kube-proxy, svcnet installed with `kubectl apply -k
# manifests/overlays/kind` and switched to under traffic, named and timed steps, everything torn down at the end.
e2e: deps
	bash e2e/kind/e2e.sh

# The lab's end-to-end tests on the real control plane: named steps from ClusterIP to restarts, etcd
# compaction, GCE faults and a leak check; then IPv6 and dual-stack LBs (e2e/lab/README.md).
e2e-lab: deps
	$(CARGO) build --locked $(LAB_BINS)
	CI=true SVCNET_LAB_PREBUILT=1 $(CARGO) test --locked -p svcnet-lab --test lab --test dual_stack -- --nocapture

# Regenerate manifests/crds from the Rust types (CI fails on stale YAML via crds/tests).
crds:
	$(CARGO) run -q -p svcnet-crds --locked -- write --out manifests/crds

crds-check:
	$(CARGO) run -q -p svcnet-crds --locked -- check --dir manifests/crds

manifests: crds

# Render every overlay, validate it offline against the Kubernetes schemas, apply every overlay to the real
# kube-apiserver with kubectl (testing/k8s), and cross-check RBAC and flags (also part of `make test`).
manifests-check:
	$(CARGO) test -p svcnet-crds --test manifests_valid --test manifests_apply --locked

# Container images (proxy/Dockerfile, cloud-controller/Dockerfile): the machine's Docker daemon when one
# answers, else an engine started for the run in a network namespace of its own (testing/engine/dockerd.sh,
# root); the Dockerfiles' bases and Rust build stage when a registry answers, else Debian bases made by
# debootstrap (cached per machine) and release binaries built here. Prints both names and sizes.
IMAGE_PREFIX ?= svcnet
IMAGE_TAG ?= dev
images: deps
	IMAGE_PREFIX=$(IMAGE_PREFIX) IMAGE_TAG=$(IMAGE_TAG) bash testing/engine/images.sh
