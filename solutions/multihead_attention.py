"""Answers to the stubs of book/multihead-attention.md (D2L 11.5), by grade_id = function or class name.

The bodies are pasted into the notebook by the assembler, so they use only the notebook's names.
"""


def square(x):
    return x * x
