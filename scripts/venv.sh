# Sourced by the scripts after scripts/deps: Python (the aggio tool, pytest,
# bench/matrix, the trace checks) comes from the virtual environment .venv.
# shellcheck shell=bash
if [ -x "$PWD/.venv/bin/python" ]; then
  export VIRTUAL_ENV="$PWD/.venv"
  export PATH="$VIRTUAL_ENV/bin:$PATH"
fi
