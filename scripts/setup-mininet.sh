#!/usr/bin/env bash
# Set up Mininet for the project (docs/mininet.md):
#   1. Debian's `mininet` package (it brings `mnexec`; the PyPI package alone lacks it),
#      with iputils-ping, installed with apt-get when run as root and missing;
#   2. its Python package made importable from the project's virtual environment: a
#      symbolic link to Debian's `mininet` package folder in the venv's site-packages
#      (only that package; not the rest of Debian's dist-packages), plus setuptools in
#      the venv on Python >= 3.12 (Mininet 2.3 imports distutils).
#
#   scripts/setup-mininet.sh [VENV]      # VENV defaults to .venv beside this folder
#
# Idempotent and quick when all is there.  Exit 0: Mininet is ready (root, mnexec, and
# `import mininet.net` works in VENV); 1: it is not (one line says why; the Mininet tests
# then skip with that reason); 2: usage.  Open vSwitch is not installed (not needed: the
# builder uses namespaces and veths only; recommended packages are skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv}
case "$VENV" in -h|--help) sed -n '2,16p' "$0"; exit 0 ;; esac
say() { echo "setup-mininet: $*" >&2; }

if [ "$(uname -s)" != Linux ]; then
    say "Mininet needs Linux; skipped"
    exit 1
fi

if ! command -v mnexec >/dev/null 2>&1 || ! command -v ifconfig >/dev/null 2>&1 \
        || ! command -v ping >/dev/null 2>&1; then
    if [ "$(id -u)" != 0 ]; then
        say "not root: cannot install Debian's mininet (run: sudo $0 $VENV)"
        exit 1
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        say "no apt-get: install Mininet 2.3 (mnexec, python package) by hand"
        exit 1
    fi
    say "installing Debian packages mininet iputils-ping"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends mininet iputils-ping >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
    say "no virtual environment at $VENV (./dev creates it); mnexec is installed"
    exit 1
fi
PY="$VENV/bin/python"

if "$PY" -c 'import mininet.net' >/dev/null 2>&1; then
    say "ready: $("$PY" -c 'import mininet, os; print(os.path.dirname(mininet.__file__))')"
    exit 0
fi

# Debian's package folder (python3-only, pure Python): ask dpkg, else the usual place.
SRC=""
if command -v dpkg >/dev/null 2>&1; then
    SRC=$(dpkg -L mininet 2>/dev/null | grep -m1 '/mininet/net\.py$' || true)
    SRC=${SRC%/net.py}
fi
[ -n "$SRC" ] || SRC=/usr/lib/python3/dist-packages/mininet
if [ ! -f "$SRC/net.py" ]; then
    say "Debian's mininet Python package not found (expected $SRC/net.py)"
    exit 1
fi
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ -e "$SITE/mininet" ] && [ ! -L "$SITE/mininet" ]; then
    say "$SITE/mininet exists and is not our link; leaving it alone"
    exit 1
fi
ln -sfn "$SRC" "$SITE/mininet"

if ! "$PY" -c 'import mininet.net' >/dev/null 2>&1; then
    if "$PY" -c 'import mininet.net' 2>&1 | grep -q distutils; then
        say "Python >= 3.12: installing setuptools into $VENV (Mininet 2.3 imports distutils)"
        "$PY" -m pip install -q setuptools >/dev/null
    fi
fi
if ! err=$("$PY" -c 'import mininet.net' 2>&1); then
    say "import mininet.net fails in $VENV: $(echo "$err" | tail -n 1)"
    exit 1
fi
say "ready: $SITE/mininet -> $SRC"
exit 0
