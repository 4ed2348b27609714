"""How 11.5's offset reader is trained: once per setting, then loaded (D2L 11.5; the course's machinery beside
:mod:`qkv.figures.multihead_attention`, which defines the model, its task and its data, and draws what it learnt).
"""

from __future__ import annotations

import functools

from qkv.costlab import one_thread
from qkv.figures.multihead_attention import OffsetData, OffsetReader, OffsetTask
from qkv.recipes.weights import Fitted, fit_or_load
from qkv.training import Trainer

__all__ = ["fit_offset_reader", "trained_offset_reader"]

#: The task the page trains on (the defaults of :class:`~qkv.figures.multihead_attention.OffsetTask`).
TASK = OffsetTask()


def fit_offset_reader(task: OffsetTask = TASK, log=None) -> Fitted:
    """:class:`~qkv.figures.multihead_attention.OffsetReader` trained with Adam on its data, seeded by ``task.seed``,
    on one thread (tensors this small train several times faster on one thread than on contended ones), or loaded if
    it was trained before in this setting (:func:`qkv.recipes.weights.fit_or_load`, which also refuses to train where
    training is forbidden). ``log`` gets fit_or_load's one-line message (default: none)."""
    trainer = Trainer(1, seed=task.seed, optimizer="adam", lr=task.lr, progress=False, device="cpu", threads=1)
    with one_thread():
        return fit_or_load(
            "offset-reader", lambda: OffsetReader(task), OffsetData(task), trainer, config=task,
            modules=(__name__,), log=log or (lambda message: None),
        )  # fmt: skip


@functools.lru_cache(maxsize=4)
def trained_offset_reader(task: OffsetTask = TASK) -> OffsetReader:
    """The model of :func:`fit_offset_reader`, once per process and task, in evaluation mode, with
    ``train_seconds`` (the wall time of its training) and ``trained_now`` (False when its weights were loaded).
    Do not change its weights: the cache hands out the same model. Listed in 11.5's front matter (``trains:``), so
    that ``make release`` trains it before any grading run."""
    fitted = fit_offset_reader(task)
    model = fitted.model.eval()
    model.train_seconds, model.trained_now = fitted.seconds, fitted.trained
    return model
