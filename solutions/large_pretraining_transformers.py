"""Answers to the stubs of book/large-pretraining-transformers.md (D2L 11.9), by grade_id = function or class name.

The bodies are pasted into the notebook by the assembler, so they use only the notebook's names.
"""


def square(x):
    return x * x
