#!/usr/bin/env bash
# Gradescope from an empty machine: build a section's autograder zip, make a fresh Debian root with debootstrap,
# run setup.sh and run_autograder in it on a solved, an unanswered, a wrong and a tampered notebook, measure setup's
# time and the peak memory of grading, and write benchmarks/results/gradescope_chroot.md. Slow (minutes per
# section), so no test runs it. benchmarks/_gradescope_chroot.py says what it does, step by step.
#
#   sudo benchmarks/gradescope_chroot.sh                     # 11.3 (rationed feedback), 11.7 and 11.3's --bubblewrap zip
#   sudo benchmarks/gradescope_chroot.sh --section transformer --bubblewrap ''
#   sudo benchmarks/gradescope_chroot.sh --memory all --write-memory   # every section's peak, into memory.toml
#   sudo benchmarks/gradescope_chroot.sh --torch-index-url unset       # PyTorch from its own index, as on Gradescope
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "gradescope_chroot.sh: run as root (debootstrap, chroot, mounts and memory cgroups need it)" >&2
  exit 2
fi
if ! command -v debootstrap >/dev/null && [ ! -f _build/gradescope-chroot/debian-bookworm-minbase.tar.gz ]; then
  echo "gradescope_chroot.sh: debootstrap is missing: apt-get install debootstrap" >&2
  exit 2
fi
exec .venv/bin/python benchmarks/_gradescope_chroot.py "$@"
