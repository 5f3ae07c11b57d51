#!/usr/bin/env bash
# Install tshark (Wireshark's command line) for the dissector's tests (tools/wireshark/).
#
#   scripts/setup-tshark.sh
#
# Debian's package `tshark`, installed with apt-get when run as root and missing.  Its
# dependency wireshark-common asks (debconf) whether non-root users may capture; that is
# answered "no" beforehand, and the install runs with DEBIAN_FRONTEND=noninteractive, so
# nothing waits for a terminal (CI has no standard input).  Idempotent and quick when
# tshark is there.  Exit 0: tshark runs; 1: it is not there and cannot be installed here
# (one line says why; the tests that need it then skip with that reason).
set -euo pipefail
say() { echo "setup-tshark: $*" >&2; }

if command -v tshark >/dev/null 2>&1; then
    say "ready: $(tshark --version 2>/dev/null | head -n 1)"
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    say "not root: cannot install Debian's tshark (run: sudo $0)"
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    say "no apt-get: install tshark (Wireshark 3.x or later) by hand"
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
if command -v debconf-set-selections >/dev/null 2>&1; then
    echo "wireshark-common wireshark-common/install-setuid boolean false" \
        | debconf-set-selections
fi
say "installing Debian package tshark"
apt-get update -qq
apt-get install -y -qq --no-install-recommends tshark </dev/null >/dev/null
if ! command -v tshark >/dev/null 2>&1; then
    say "apt-get finished but tshark is not on PATH"
    exit 1
fi
say "ready: $(tshark --version 2>/dev/null | head -n 1)"
