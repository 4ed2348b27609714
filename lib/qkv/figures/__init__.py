"""The figures of the course's sections, one module per section (D2L 11.1-11.9).

A section's figures live in ``qkv.figures.<module>``, where ``<module>`` is
the section's slug with ``_`` for ``-`` (``attention-scoring-functions`` ->
:mod:`qkv.figures.attention_scoring_functions`; ``course.section.Section``
derives the name). Every such module has a ``glance()`` function that draws
the section's "at a glance" figure, the diagram that opens the section, and
returns the matplotlib ``Figure``. Other figures of that section live beside
it in the same module. Helpers the modules share are in the private
:mod:`qkv.figures._draw`.

The notebooks import a section's module and call it in a cell whose input is
hidden in the book::

    from qkv.figures import attention_scoring_functions as figures
    figures.glance();

Drawing code is kept here so that the notebooks stay about attention. This
package re-exports nothing: adding a section is adding a module, and
``tests/unit/course/test_book_structure.py`` says which section lacks one.
"""
