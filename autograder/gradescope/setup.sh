#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image on its Ubuntu base image: the Debian
# packages the section needs (debian-packages.txt), Python 3.11 where every user can read it (student code runs
# as the unprivileged user nobody), and the course's pinned environment (constraints.txt: PyTorch's CPU build,
# nbgrader, ...) in $ROOT/venv. AUTOGRADER_ROOT names another root folder than /autograder.
#
# TORCH_INDEX_URL chooses where PyTorch comes from (README.md in the zip says more):
#   unset            PyTorch's CPU index, https://download.pytorch.org/whl/cpu (what Gradescope needs: PyPI's
#                    wheel brings CUDA, gigabytes that a CPU container never uses);
#   set and empty    pip's own configuration (pip.conf, PIP_INDEX_URL, PIP_FIND_LINKS...): a mirror, or wheels on
#                    the local disk, for a machine that cannot reach PyTorch's index;
#   a URL            that index (https://... or file://...).
PYTORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"

# torch_index_args: pip's arguments that choose PyTorch's index from TORCH_INDEX_URL, one a line (none: pip's
# own configuration); a value that is not a URL is refused, with what to do instead.
torch_index_args() {
  if [ -z "${TORCH_INDEX_URL+set}" ]; then
    printf '%s\n' --index-url "$PYTORCH_CPU_INDEX"
  elif [ -n "$TORCH_INDEX_URL" ]; then
    case "$TORCH_INDEX_URL" in
      http://* | https://* | file://*) printf '%s\n' --index-url "$TORCH_INDEX_URL" ;;
      *)
        echo "setup.sh: TORCH_INDEX_URL='$TORCH_INDEX_URL' is not a URL (https://... or file://...). Unset it for" \
          "PyTorch's CPU index, or set it empty (TORCH_INDEX_URL=) for pip's own configuration." >&2
        return 2
        ;;
    esac
  fi
}

# install_torch PIP...: install PyTorch, at constraints.txt's version, with the pip command PIP... (its arguments
# up to the package: "python -m pip install -c constraints.txt"), from the index TORCH_INDEX_URL chooses.
install_torch() {
  local found args=()
  found="$(torch_index_args)" || return $?
  if [ -n "$found" ]; then mapfile -t args <<<"$found"; fi
  local from="pip's own configuration (TORCH_INDEX_URL is empty)"
  echo "setup: PyTorch from ${args[1]:-$from}"
  "$@" "${args[@]}" torch
}

# python_at_least PYTHON MIN: whether the interpreter PYTHON runs and is version MIN (3.11.5) or later.
python_at_least() {
  "$1" -c 'import sys; need = tuple(int(x) for x in sys.argv[1].split(".")); sys.exit(sys.version_info[:3] < need)' \
    "$2" >/dev/null 2>&1
}

# choose_python MIN: print a Python 3.11 of version MIN or later (python-version.txt: the oldest that every pinned
# package accepts) that every user can run: the system's (Ubuntu's, Debian's) where it is recent enough, else uv's
# build, installed under /opt (never under /root: the sandbox's user runs it). Ubuntu 22.04's python3.11 is 3.11.0
# and Debian 12's 3.11.2: older than some pins need, so there it is uv's.
choose_python() {
  local min="$1" python
  python="$(command -v python3.11 || true)"
  if [ -z "$python" ] && apt-get install -y -q --no-install-recommends python3.11 python3.11-venv >&2; then
    python="$(command -v python3.11 || true)"
  fi
  if [ -n "$python" ] && python_at_least "$python" "$min"; then
    if ! "$python" -m venv --help >/dev/null 2>&1; then
      apt-get install -y -q --no-install-recommends python3.11-venv >&2
    fi
    echo "setup: Python $("$python" -c 'import platform; print(platform.python_version())') at $python" >&2
    echo "$python"
    return
  fi
  if [ -n "$python" ]; then
    echo "setup: $python is Python $("$python" -c 'import platform; print(platform.python_version())'), older than" \
      "$min, which the pinned packages need (python-version.txt): installing uv's Python 3.11 instead" >&2
  fi
  if ! { apt-get install -y -q --no-install-recommends curl >&2 &&
    curl -LsSf https://astral.sh/uv/install.sh | env UV_INSTALL_DIR=/opt/uv/bin sh >&2 &&
    UV_PYTHON_INSTALL_DIR=/opt/uv/python /opt/uv/bin/uv python install 3.11 >&2; }; then
    echo "setup.sh: no Python 3.11 of $min or later here, and uv could not install one (it downloads from" \
      "astral.sh and GitHub). Put a recent enough python3.11 on PATH, or let this machine reach them." >&2
    return 1
  fi
  python="$(UV_PYTHON_INSTALL_DIR=/opt/uv/python /opt/uv/bin/uv python find 3.11)"
  if ! python_at_least "$python" "$min"; then
    echo "setup.sh: uv's Python 3.11 ($python) is older than $min, which the pinned packages need" >&2
    return 1
  fi
  echo "setup: uv's Python at $python" >&2
  echo "$python"
}

main() {
  local root="${AUTOGRADER_ROOT:-/autograder}"
  local source="$root/source"
  export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1
  torch_index_args >/dev/null || return # a bad TORCH_INDEX_URL stops here, before anything is installed

  apt-get update -q
  # shellcheck disable=SC2046  # one package a word
  apt-get install -y -q --no-install-recommends ca-certificates $(grep -v '^#' "$source/debian-packages.txt")

  local python
  python="$(choose_python "$(head -n 1 "$source/python-version.txt" 2>/dev/null || echo 3.11.0)")"
  "$python" -m venv "$root/venv"
  local pip=("$root/venv/bin/python" -m pip install -q -c "$source/constraints.txt")
  "${pip[@]}" pip
  # PyTorch's CPU build (PyPI's wheel brings CUDA), at constraints.txt's version.
  install_torch "${pip[@]}"
  "${pip[@]}" -r "$source/requirements.txt"

  # Readable by all: what the sandbox's user runs. Root's alone: the course, whose gradebook holds the hidden tests.
  chmod -R a+rX "$root/venv" "$source/code" "$source/trained"
  local folder
  for folder in "$source/data" /opt/uv; do
    if [ -d "$folder" ]; then chmod -R a+rX "$folder"; fi
  done
  chmod -R go-rwx "$source/course"
  chmod 755 "$root/run_autograder" 2>/dev/null || true
  "$root/venv/bin/python" -c "import torch, nbgrader, pyseccomp; print('setup: torch', torch.__version__)"
}

# Run as a script (Gradescope: bash setup.sh), not when sourced (the course's tests call the functions above).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  main "$@"
fi
