# Sourced by the scripts: make .venv and install the project into it, once per
# change of pyproject.toml or constraints.txt. Needs only Python 3.11+ on PATH.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
extras=${1:-}
python=${PYTHON:-}
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
stamp=".venv/.installed${extras:+-$extras}"
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt \
    -e ".${extras:+[$extras]}"
  echo "$want" > "$stamp"
fi
