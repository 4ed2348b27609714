"""``python -m sandboxed``: the sandbox's entry point (``autograder.sandbox`` starts it inside bubblewrap)."""

from __future__ import annotations

import argparse

from .protocol import SCRATCH_OPTION
from .zygote import zygote


def main(argv=None) -> None:
    """Run the zygote (``python -m sandboxed --control-fd N --preload a,b [--scratch DIR]``)."""
    parser = argparse.ArgumentParser(description="The grading sandbox's zygote (run by autograder.sandbox).")
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--preload", default="")
    parser.add_argument(SCRATCH_OPTION, dest="scratch", default=None, help="no bubblewrap: the only writable folder")
    args = parser.parse_args(argv)
    zygote(args.control_fd, [m for m in args.preload.split(",") if m], args.scratch)


if __name__ == "__main__":
    main()
