#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image on its Ubuntu base image: the Debian
# packages the section needs (debian-packages.txt), Python 3.11 where every user can read it (student code runs
# as the unprivileged user nobody), and the course's pinned environment (constraints.txt: PyTorch's CPU build,
# nbgrader, ...) in $ROOT/venv. AUTOGRADER_ROOT names another root folder than /autograder.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
SOURCE="$ROOT/source"
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1

apt-get update -q
# shellcheck disable=SC2046  # one package a word
apt-get install -y -q --no-install-recommends ca-certificates $(grep -v '^#' "$SOURCE/debian-packages.txt")

# Python 3.11, as the course pins it: Ubuntu's own where it has one, else uv's build, installed under /opt so that
# the unprivileged user that runs student code can read it (never under /root).
PYTHON=""
if command -v python3.11 >/dev/null && python3.11 -m venv --help >/dev/null 2>&1; then
  PYTHON="$(command -v python3.11)"
elif apt-get install -y -q --no-install-recommends python3.11 python3.11-venv >/dev/null 2>&1; then
  PYTHON="$(command -v python3.11)"
else
  apt-get install -y -q --no-install-recommends curl
  curl -LsSf https://astral.sh/uv/install.sh | env UV_INSTALL_DIR=/opt/uv/bin sh
  UV_PYTHON_INSTALL_DIR=/opt/uv/python /opt/uv/bin/uv python install 3.11
  PYTHON="$(UV_PYTHON_INSTALL_DIR=/opt/uv/python /opt/uv/bin/uv python find 3.11)"
fi
"$PYTHON" -m venv "$ROOT/venv"
PIP=("$ROOT/venv/bin/python" -m pip install -q -c "$SOURCE/constraints.txt")
"${PIP[@]}" pip
# PyTorch's CPU build from PyTorch's index (PyPI's wheel brings CUDA), at constraints.txt's version.
"${PIP[@]}" --index-url https://download.pytorch.org/whl/cpu torch
"${PIP[@]}" -r "$SOURCE/requirements.txt"

# Readable by all: what the sandbox's user runs. Root's alone: the course, whose gradebook holds the hidden tests.
chmod -R a+rX "$ROOT/venv" "$SOURCE/code" "$SOURCE/trained"
for folder in "$SOURCE/data" /opt/uv; do
  if [ -d "$folder" ]; then chmod -R a+rX "$folder"; fi
done
chmod -R go-rwx "$SOURCE/course"
chmod 755 "$ROOT/run_autograder" 2>/dev/null || true
"$ROOT/venv/bin/python" -c "import torch, nbgrader, pyseccomp; print('setup: torch', torch.__version__)"
