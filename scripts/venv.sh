# Sourced by scripts/setup and scripts/serve: the project's virtual environment in .venv,
# made with the first Python >= 3.11 found (PYTHON=... chooses one). Works with a system
# Python that refuses pip (PEP 668): nothing is installed outside .venv.

VENV="$PWD/.venv"

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_install() {
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

python_ok() {
  "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' >/dev/null 2>&1
}

find_python() {
  for candidate in "${PYTHON:-}" python3 python3.13 python3.12 python3.11; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 && python_ok "$candidate"; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

ensure_venv() {
  if [ -x "$VENV/bin/python" ] && python_ok "$VENV/bin/python" \
      && "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    return 0
  fi
  local python
  if ! python=$(find_python); then
    echo "error: no Python >= 3.11 found; install one or set PYTHON=/path/to/python3" >&2
    exit 1
  fi
  rm -rf "$VENV"
  if ! "$python" -m venv "$VENV" >/dev/null 2>&1; then
    # Debian and Ubuntu ship venv's pip bootstrap separately (python3-venv).
    rm -rf "$VENV"
    local version
    version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    apt_install python3-venv "python$version-venv" || apt_install python3-venv
    "$python" -m venv "$VENV"
  fi
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
}

# pip_install STAMP SPEC: install the project (SPEC, e.g. '.[dev]') into .venv unless it was
# installed already from this very pyproject.toml.
pip_install() {
  local stamp="$VENV/.installed-$1" wanted
  wanted=$(cksum < pyproject.toml)
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
    return 0
  fi
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e "$2"
  echo "$wanted" > "$stamp"
}

build_client() {
  if [ -f client_js/package.json ] && [ ! -d client_js/dist ]; then
    (cd client_js && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
  fi
}
