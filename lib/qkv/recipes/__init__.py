"""The course's own training recipes: how we train a section's models on a CPU, kept apart from the models.

A model module (:mod:`qkv.vit`) holds what D2L builds, for students to read beside the book; a recipe module holds
what the course adds to train it in minutes on a laptop's cores (optimiser, schedule, initial values, shortcuts)
and the functions that train it once and then load the cached weights (:mod:`qkv.trained`). One module per model
module, named like it: :mod:`qkv.recipes.vit` trains :mod:`qkv.vit`'s ViT (D2L 11.8) and its CNN baseline.
(The translators of 11.4 and 11.7 train in D2L's own setting, :func:`qkv.translate.train_d2l`.)
"""
