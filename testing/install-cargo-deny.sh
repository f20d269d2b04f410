#!/usr/bin/env bash
# Installs cargo-deny, `make lint`'s dependency licence and ban check (deny.toml), from crates.io when
# missing (a no-op otherwise). cargo-deny is MIT OR Apache-2.0. Its release profile asks for fat LTO
# with one codegen unit; that is switched off here because it only lengthens the build of a tool that
# reads Cargo.lock and a few licence files. Build time on the 2-core machine: see README "Lint".
set -euo pipefail

CARGO_DENY_VERSION=0.20.2
if cargo deny --version >/dev/null 2>&1; then
  exit 0
fi
echo "install-cargo-deny: building cargo-deny $CARGO_DENY_VERSION from crates.io (a few minutes)" >&2
CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  cargo install --locked cargo-deny --version "$CARGO_DENY_VERSION"
