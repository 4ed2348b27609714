"""``python -m sandboxed``: the sandbox's entry point (``autograder.sandbox`` starts it inside bubblewrap)."""

from __future__ import annotations

import argparse

from .zygote import zygote


def main(argv=None) -> None:
    """Run the zygote (``python -m sandboxed --control-fd N --preload a,b``)."""
    parser = argparse.ArgumentParser(description="The grading sandbox's zygote (run by autograder.sandbox).")
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--preload", default="")
    args = parser.parse_args(argv)
    zygote(args.control_fd, [m for m in args.preload.split(",") if m])


if __name__ == "__main__":
    main()
