# Sourced by the scripts: defines `venv_ready [EXTRAS]`, which makes .venv and
# installs the project into it, once per change of pyproject.toml or constraints.txt.
# Needs only Python 3.11+ on PATH. The extras are an argument of the function, never
# of `source`: a sourced file sees the sourcing script's own arguments as $1...
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

venv_ready() {
  local extras=${1:-} python=${PYTHON:-} candidate want
  if [ -z "$python" ]; then
    for candidate in python3.13 python3.12 python3.11 python3; do
      if command -v "$candidate" >/dev/null 2>&1 &&
         "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        python=$candidate; break
      fi
    done
  fi
  [ -n "$python" ] || { echo "helpdesk: Python 3.11 or newer is needed" >&2; exit 1; }
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  want=$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)
  # An install with extras includes the plain one.
  if [ -z "$extras" ] && grep -qx "$want" .venv/.installed* 2>/dev/null; then
    return 0
  fi
  local stamp=".venv/.installed${extras:+-$extras}"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt \
      -e ".${extras:+[$extras]}"
    echo "$want" > "$stamp"
  fi
}

# `spectral_ready`: installs the pinned Spectral (spectral/package-lock.json) into
# spectral/node_modules with `npm ci`, once per change of the lock file; needs node and
# npm on PATH. No install scripts run: Spectral needs none.
spectral_ready() {
  local want stamp=spectral/node_modules/.installed
  command -v npm >/dev/null 2>&1 || { echo "helpdesk: npm is needed for Spectral" >&2; exit 1; }
  want=$(sha256sum spectral/package-lock.json | cut -c1-16)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    npm ci --prefix spectral --ignore-scripts --no-audit --no-fund --loglevel=error
    echo "$want" > "$stamp"
  fi
}
