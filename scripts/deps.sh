#!/usr/bin/env bash
# Installs ebnode's build and test dependencies from Debian when any is missing.
# iproute2, nftables and ethtool: the network-partition tests (tests/partition).
# Idempotent: does nothing (and needs no root) when everything is present.
# --test (scripts/test.sh): also what only the tests need -- chromium and
# the npm packages of the real-browser tests (tests/browser), and what --java
# installs; scripts/cluster up does not pass it.
# --java (bench/java.sh): also the Java runtime and the jars of the Vert.x
# 4.5.15 fixtures in ../shared/vertx45 (the Java engine uses Curator).
set -euo pipefail
test_deps=0
java_deps=0
case "${1:-}" in
--test) test_deps=1 java_deps=1 ;;
--java) java_deps=1 ;;
esac

PKGS=(cmake gcc clang libclang-rt-14-dev clang-format clang-tidy libuv1-dev libjansson-dev
      libssl-dev libzookeeper-st-dev zookeeper libhttp-parser-dev libcmocka-dev
      libwslay-dev
      openssl procps python3 nodejs npm
      iproute2 nftables ethtool
      lowdown man-db groff-base lintian dpkg-dev pkgconf adduser bash-completion
      systemd)

if [ "$test_deps" = 1 ]; then
	PKGS+=(chromium)
fi
if [ "$java_deps" = 1 ]; then
	# the Java runtime of the Vert.x 4.5.15 fixtures (bench/java.sh, it.vertx.*)
	PKGS+=(default-jre-headless libcurator-client-java libcurator-framework-java
	       libcurator-recipes-java libzookeeper-java libguava-java libslf4j-java)
fi

missing=()
for p in "${PKGS[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing+=("$p")
	fi
done
# nodejs/npm may come from outside Debian (e.g. a preinstalled toolchain):
# accept any working node and npm on PATH instead of the packages.
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
	keep=()
	for p in "${missing[@]}"; do
		case "$p" in nodejs|npm) ;; python3) command -v python3 >/dev/null 2>&1 || keep+=("$p") ;; *) keep+=("$p") ;; esac
	done
	missing=("${keep[@]+"${keep[@]}"}")
fi

if [ "${#missing[@]}" -gt 0 ]; then
	echo "deps: installing: ${missing[*]}" >&2
	SUDO=""
	if [ "$(id -u)" -ne 0 ]; then
		SUDO="sudo"
	fi
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -q
	$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
	echo "deps: all Debian packages present" >&2
fi

# The Node bridge client used by the interop test (tests/interop).
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ -f "$here/tests/interop/package.json" ] && [ ! -d "$here/tests/interop/node_modules/vertx3-tcp-eventbus-client" ]; then
	echo "deps: npm install in tests/interop" >&2
	(cd "$here/tests/interop" && npm install --no-audit --no-fund --silent)
fi
# The real-browser tests (tests/browser): puppeteer-core and the Vert.x
# browser client, pinned by package-lock.json; chromium comes from Debian.
if [ "$test_deps" = 1 ] && [ -f "$here/tests/browser/package-lock.json" ] &&
	[ ! -d "$here/tests/browser/node_modules/puppeteer-core" ]; then
	echo "deps: npm ci in tests/browser" >&2
	(cd "$here/tests/browser" && npm ci --no-audit --no-fund --silent)
fi
