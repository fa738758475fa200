#!/usr/bin/env bash
# Install everything the assistant and its tests need, on Debian or Ubuntu with Python 3.11:
#   1. system packages, through apt when run as root or with sudo (only those missing):
#      Chromium and its driver (the browser tests), a C/C++ toolchain (llama.cpp is built from
#      source for this CPU), the venv module;
#   2. the pinned Python packages (requirements.lock, --no-deps) and this project, editable,
#      into ./.venv, or into the virtual environment that is active.
# Then: .venv/bin/python -m pytest   (or python -m pytest inside your own environment)
set -euo pipefail
cd "$(dirname "$0")"

python=${PYTHON:-}
if [ -z "$python" ]; then
    for candidate in python3.11 python3; do
        if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
            python=$candidate
            break
        fi
    done
fi
if [ -z "$python" ]; then
    echo "error: Python 3.11 is needed (the lock pins wheels for it); install python3.11 or set PYTHON=/path/to/python3.11" >&2
    exit 1
fi

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
command -v gcc >/dev/null || missing+=(gcc)
command -v g++ >/dev/null || missing+=(g++)
command -v make >/dev/null || missing+=(make)
[ -n "${VIRTUAL_ENV:-}" ] || "$python" -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        as_root=()
    elif command -v sudo >/dev/null; then
        as_root=(sudo)
    else
        echo "error: these system packages are missing: ${missing[*]}" >&2
        echo "       run this script as root or with sudo, or install them with apt-get first" >&2
        exit 1
    fi
    echo "installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${as_root[@]}" apt-get install -y -qq "${missing[@]}" \
        || { "${as_root[@]}" apt-get update -qq && "${as_root[@]}" apt-get install -y -qq "${missing[@]}"; }
fi

if [ -n "${VIRTUAL_ENV:-}" ]; then
    venv=$VIRTUAL_ENV
else
    venv=.venv
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
fi
echo "installing the pinned Python packages into $venv (llama.cpp builds from source: several minutes)"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --no-deps -r requirements.lock -e .
echo "done. Test: $venv/bin/python -m pytest    Serve the app: $venv/bin/python app.py"
