"""Reference answers to every graded stub in book/, one module per section (see autograder/assemble.py)."""
