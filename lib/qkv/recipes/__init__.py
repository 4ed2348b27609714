"""The course's machinery beside the library: how it trains a section's models and keeps their weights.

A model module (:mod:`qkv.vit`) holds what D2L builds, for students to read beside the book; this package holds
what the course adds to train it in minutes on a laptop's cores and never to train it twice:

- :mod:`qkv.recipes.weights`: train a model once per setting and load it every other time (:func:`fit_or_load`),
  under a key of everything that determines its weights (:mod:`qkv.recipes.keys`);
- :mod:`qkv.recipes.translate`: D2L's setting for its translators (11.4, 11.7), :func:`train_d2l`;
- :mod:`qkv.recipes.lm`: 11.9's GPT, GRU and scaling study, their sizes and budgets;
- :mod:`qkv.recipes.offsets`: 11.5's offset reader;
- :mod:`qkv.recipes.vit`: our CPU recipe for 11.8's ViT (optimiser, schedule, initial positions, shortcuts) and its
  CNN baseline.

Which page trains which model is said once, in the page's front matter (``trains:``,
:attr:`course.section.Section.trains`). The concept modules never import this package (the import contract in
``pyproject.toml``); the figures and explorers ask it for a trained model when they show one.
"""
