"""The course's machinery beside the library: how it trains a section's models and keeps their weights.

A model module (:mod:`qkv.vit`) holds what D2L builds, for students to read beside the book; this package holds
what the course adds to train it in minutes on a laptop's cores and never to train it twice:

- :mod:`qkv.recipes.weights`: train a model once per setting and load it every other time (:func:`fit_or_load`),
  under a key of everything that determines its weights (:mod:`qkv.recipes.keys`);
- :mod:`qkv.recipes.vit`: our CPU recipe for 11.8's ViT (optimiser, schedule, initial positions, shortcuts) and its
  CNN baseline.

Which page trains which model is said once, in the page's front matter (``trains:``,
:attr:`course.section.Section.trains`). The concept modules never import this package (the import contract in
``pyproject.toml``); the translators of 11.4 and 11.7 (:mod:`qkv.translate`), 11.9's models (:mod:`qkv.lm`) and
11.5's offset reader (:mod:`qkv.figures.multihead_attention`) still call :func:`weights.fit_or_load` themselves, the
three edges the contract lists as known until their training moves here.
"""
