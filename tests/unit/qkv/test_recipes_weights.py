"""Tests for qkv.recipes.weights and qkv.recipes.keys: trained weights cached under a key of everything that
determines them (D2L 11.4)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from torch import nn

from qkv.recipes import keys, weights
from qkv.training import Trainer


class _Data:
    """A tiny regression problem with the data-module interface the Trainer uses."""

    def __init__(self, n=32, batch_size=8, shift=0.0):
        g = torch.Generator().manual_seed(0)
        self.X = torch.randn(n, 3, generator=g)
        self.y = self.X @ torch.tensor([1.0, -2.0, 0.5]) + shift
        self.batch_size = batch_size

    def train_dataloader(self):
        dataset = torch.utils.data.TensorDataset(self.X, self.y[:, None])
        return torch.utils.data.DataLoader(dataset, self.batch_size, shuffle=True)


@dataclass
class _Config:
    hidden: int = 4


class _Regressor(nn.Sequential):
    def loss(self, y_hat, y):
        return ((y_hat - y) ** 2).mean()


def _build(config=None):
    config = config or _Config()
    return lambda: _Regressor(nn.Linear(3, config.hidden), nn.Tanh(), nn.Linear(config.hidden, 1))


def _fit(data=None, config=None, epochs=2, seed=0, log=None, lr=0.05, optimizer="sgd", clip=0.0):
    config = config or _Config()
    messages = [] if log is None else log
    trainer = Trainer(epochs, clip, seed=seed, device="cpu", optimizer=optimizer, lr=lr, progress=False)
    fitted = weights.fit_or_load("toy", _build(config), data or _Data(), trainer, config=config, log=messages.append)
    return fitted, messages


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(weights.TRAINED_ENV, str(tmp_path / "trained"))
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.delenv(weights.NO_TRAIN_ENV, raising=False)
    monkeypatch.delenv(weights.SMOKE_ENV, raising=False)


def _same_weights(a: nn.Module, b: nn.Module) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_same_key_loads_identical_weights_without_training():
    first, log1 = _fit()
    second, log2 = _fit()
    assert first.trained and not second.trained
    assert first.path == second.path and first.path.exists()
    assert _same_weights(first.model, second.model)
    assert second.seconds == pytest.approx(first.seconds) and second.trained_at == first.trained_at
    assert second.history["train_loss"] == first.history["train_loss"] and len(second.history["train_loss"]) == 2
    assert second.history["epoch"] == [1, 2]
    assert "training" in log1[0] and "trained in" in log1[-1]
    assert "loaded" in log2[0] and "nothing was trained" in log2[0] and f"{first.seconds:.1f} s" in log2[0]
    # The loaded weights are those training left: different from a freshly built (seeded) model.
    torch.manual_seed(0)
    assert not _same_weights(_build()(), second.model)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_trained_weights_equal_an_uncached_run(seed):
    """The cache does not change what is trained: a plain fit seeded with the trainer's seed gives the same weights."""
    fitted, _ = _fit(seed=seed)
    torch.manual_seed(seed)
    model = _build()()
    Trainer(2, seed=seed, device="cpu", optimizer="sgd", lr=0.05, progress=False).fit(model, _Data())
    assert _same_weights(model, fitted.model)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_model_is_built_after_seeding_with_the_trainers_seed(seed):
    """build() is called after torch.manual_seed(trainer.seed): its initial weights are those of
    ``torch.manual_seed(seed); build()``, and another seed's differ."""
    initial = []

    def build():
        model = _build()()
        initial.append({k: v.clone() for k, v in model.state_dict().items()})
        return model

    trainer = Trainer(2, seed=seed, device="cpu", optimizer="sgd", lr=0.05, progress=False)
    weights.fit_or_load("toy", build, _Data(), trainer, config=_Config(), log=lambda m: None)
    torch.manual_seed(seed)
    expected = _build()().state_dict()
    torch.manual_seed(seed + 1)
    other = _build()().state_dict()
    assert all(torch.equal(initial[0][k], expected[k]) for k in expected), "not built after manual_seed(trainer.seed)"
    assert not all(torch.equal(initial[0][k], other[k]) for k in other)


@pytest.mark.parametrize(
    "change",
    [
        {"epochs": 3},
        {"seed": 1},
        {"config": _Config(hidden=5)},
        {"data": _Data(shift=1.0)},
        {"data": _Data(batch_size=4)},
        {"lr": 0.1},
        {"optimizer": "adam"},
        {"clip": 1.0},
    ],
    ids=["epochs", "seed", "config", "data-content", "batch-size", "lr", "optimizer", "clipping"],
)
def test_a_changed_key_trains_again(change):
    base, _ = _fit()
    other, _ = _fit(**change)
    assert other.trained and other.path != base.path
    assert other.key != base.key


def test_changed_source_or_torch_version_changes_the_key(monkeypatch):
    base, _ = _fit()
    assert "qkv.training" in base.key["modules"] and "qkv.recipes.weights" in base.key["modules"]
    real = keys.source_hash
    monkeypatch.setattr(keys, "source_hash", lambda mods: real(mods) + "-edited")
    edited, _ = _fit()
    assert edited.trained and edited.key["source"] != base.key["source"]
    monkeypatch.setattr(keys, "source_hash", real)
    monkeypatch.setattr(torch, "__version__", "0.0.0-other")
    other_torch, _ = _fit()
    assert other_torch.trained and other_torch.key["torch"] == "0.0.0-other"


def test_key_lists_the_models_qkv_modules():
    from qkv.bahdanau import make_bahdanau

    class Data(_Data):
        pass

    model = make_bahdanau(5, 6, 4, 4, 1, 0.0, tgt_pad=0)
    key = keys.make_key("m", {"a": 1}, Trainer(1, seed=0, device="cpu"), _Data(), model)
    assert {"qkv.bahdanau", "qkv.seq2seq", "qkv.attention", "qkv.training"} <= set(key["modules"])
    assert key["trainer"]["scheduler"] is None


def test_key_counts_the_trainers_own_module_and_scheduler():
    """The ViT's class lives in qkv.vit, but the recipe that trains it (RecipeTrainer, its schedule) in
    qkv.recipes.vit: editing the recipe must retrain, and the scheduler is named in the key, not by address."""
    from qkv.recipes.vit import RecipeTrainer, ViTRecipe
    from qkv.vit import ViTConfig

    recipe = ViTRecipe(model=ViTConfig(img_size=8, patch_size=4, num_hiddens=8, mlp_num_hiddens=8, num_heads=2))
    key = keys.make_key("v", recipe, RecipeTrainer(recipe, seed=0), _Data(), recipe.build())
    assert {"qkv.vit", "qkv.recipes.vit", "qkv.training"} <= set(key["modules"])
    assert key["trainer"]["scheduler"] == "qkv.recipes.vit.ViTRecipe.schedule"
    assert key["config"]["model"]["num_hiddens"] == 8  # the model's config, nested in the recipe's


@pytest.mark.parametrize("damage", ["truncate", "garbage", "flip_weight", "other_key"])
def test_damaged_file_is_detected_and_retrained(damage):
    first, _ = _fit()
    path = first.path
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    elif damage == "garbage":
        path.write_bytes(b"not a torch file")
    else:
        payload = torch.load(path, weights_only=True)
        if damage == "flip_weight":
            name = sorted(payload["state"])[0]
            payload["state"][name] = payload["state"][name] + 1.0  # the checksum no longer matches
        else:
            payload["key"] = {**payload["key"], "name": "another"}
        torch.save(payload, path)
    again, log = _fit()
    assert again.trained, f"a {damage} file must be trained again"
    assert "damaged" in log[0]
    assert _same_weights(first.model, again.model)
    assert not _fit()[0].trained  # and the repaired file loads


def _changed(value):
    """Another value of the same kind, for a key field."""
    if isinstance(value, dict):
        return {**value, "another": 1}
    if isinstance(value, list):
        return [*value, "qkv.another"]
    if isinstance(value, int | float):
        return 2 * value + 1
    return f"{value}-another"


#: Every field of the key (and some of their parts), each changed in turn by test_loading_compares_the_whole_key.
KEY_FIELDS = ["format", "name", "config", "config.hidden", "trainer", "trainer.max_epochs", "trainer.lr",
              "trainer.seed", "data", "torch", "modules", "source"]  # fmt: skip


@pytest.mark.parametrize("field", KEY_FIELDS)
def test_loading_compares_the_whole_key(field):
    """A file at the expected path, whole (its checksum valid), but whose key differs in any field from this
    setting's (another config, trainer, data, source...) is trained again, not loaded."""
    first, _ = _fit()
    payload = torch.load(first.path, weights_only=True)
    top, _, sub = field.partition(".")
    assert top in payload["key"], f"the key has no field {top!r}: {sorted(payload['key'])}"
    if sub:
        payload["key"][top] = {**payload["key"][top], sub: _changed(payload["key"][top][sub])}
    else:
        payload["key"][top] = _changed(payload["key"][top])
    payload["state"] = {k: v + 1.0 for k, v in payload["state"].items()}  # weights this setting never trained
    payload["checksum"] = keys.state_checksum(payload["state"])  # valid: only the key is wrong
    torch.save(payload, first.path)
    again, log = _fit()
    assert again.trained, f"a file whose key differs in {field} was loaded"
    assert "key differs" in log[0]
    assert _same_weights(first.model, again.model)


def test_every_field_of_the_key_is_tested():
    """test_loading_compares_the_whole_key covers every top-level field of the key."""
    fitted, _ = _fit()
    assert set(fitted.key) == {f.partition(".")[0] for f in KEY_FIELDS}


def test_a_path_attribute_counts_by_its_name_not_its_folder(tmp_path):
    """The same file in two folders gives one key (where a file sits does not determine the weights); another file
    name gives another."""

    class WithFile(_Data):
        def __init__(self, file):
            super().__init__()
            self.file = file

    here, there = tmp_path / "here" / "corpus.txt", tmp_path / "there" / "corpus.txt"
    assert keys.fingerprint(WithFile(here)) == keys.fingerprint(WithFile(there))
    assert keys.fingerprint(WithFile(here)) != keys.fingerprint(WithFile(here.with_name("other.txt")))
    first, _ = _fit(WithFile(here))
    again, _ = _fit(WithFile(there))
    assert first.trained and not again.trained and again.path == first.path


def test_a_smoke_run_leaves_the_callers_trainer_as_it_was(monkeypatch):
    """QKV_TRAIN_SMOKE trains one epoch with a copy of the trainer: the caller's keeps its epochs, history and
    optimiser, and a real run with it afterwards trains all its epochs."""
    monkeypatch.setenv(weights.SMOKE_ENV, "2")
    trainer = Trainer(3, seed=0, device="cpu", optimizer="sgd", lr=0.05, progress=False)
    before = dict(vars(trainer))
    history = {k: list(v) for k, v in trainer.history.items()}
    smoke = weights.fit_or_load("toy", _build(), _CountingData(), trainer, config=_Config(), log=lambda m: None)
    assert smoke.trained and smoke.history["epoch"] == [1]
    assert trainer.max_epochs == 3, "the smoke run changed the caller's max_epochs"
    assert vars(trainer).keys() == before.keys() and all(vars(trainer)[k] is before[k] for k in before), [
        k for k in before if vars(trainer)[k] is not before[k]
    ]
    assert trainer.history == history and trainer.optim is None
    monkeypatch.delenv(weights.SMOKE_ENV)
    real = weights.fit_or_load("toy", _build(), _CountingData(), trainer, config=_Config(), log=lambda m: None)
    assert real.trained and real.history["epoch"] == [1, 2, 3]


@pytest.mark.parametrize("mode", ["train", "eval", "mixed"])
def test_the_model_comes_back_in_eval_mode_trained_or_loaded(mode):
    """fit_or_load returns the model in eval mode, every part of it, whether it trained it or loaded it, and
    whatever mode build() gave it."""

    def build():
        model = _build()()
        model.train(mode != "eval")
        if mode == "mixed":
            model[1].eval()
        return model

    trainer = Trainer(2, seed=0, device="cpu", optimizer="sgd", lr=0.05, progress=False)
    for expect_trained in (True, False):
        fitted = weights.fit_or_load("toy", build, _Data(), trainer, config=_Config(), log=lambda m: None)
        assert fitted.trained is expect_trained
        training = [name for name, m in fitted.model.named_modules() if m.training]
        assert not training, f"{'trained' if expect_trained else 'loaded'}: parts in training mode: {training}"


class _ArrayData(_Data):
    """``_Data`` whose examples also live in a NumPy array (a type the key must not leave out)."""

    def __init__(self, table):
        super().__init__()
        self.table = table


def test_a_numpy_array_counts_by_its_content():
    table = np.arange(12, dtype=np.float32).reshape(3, 4)
    base = keys.fingerprint(_ArrayData(table))
    assert keys.fingerprint(_ArrayData(table.copy())) == base, "equal arrays, one key"
    changed = table.copy()
    changed[2, 3] += 1
    assert keys.fingerprint(_ArrayData(changed)) != base, "a changed entry must change the key"
    assert keys.fingerprint(_ArrayData(table.astype(np.float64))) != base, "another dtype"
    assert keys.fingerprint(_ArrayData(table.reshape(4, 3))) != base, "another shape"
    assert keys.fingerprint(_ArrayData(np.asfortranarray(table))) == base, "the layout in memory does not count"
    first, _ = _fit(_ArrayData(table))
    assert not _fit(_ArrayData(table.copy()))[0].trained
    again, _ = _fit(_ArrayData(changed))
    assert again.trained and again.path != first.path, "a changed array reused stale weights"


def test_dataclasses_and_objects_with_a_fingerprint_count_by_content():
    @dataclass(frozen=True)
    class Task:
        size: int
        rate: float

    class Tagged:
        def __init__(self, tag):
            self.tag = tag

        def fingerprint(self):
            return self.tag

    assert keys.fingerprint(_ArrayData(Task(3, 0.5))) == keys.fingerprint(_ArrayData(Task(3, 0.5)))
    assert keys.fingerprint(_ArrayData(Task(3, 0.5))) != keys.fingerprint(_ArrayData(Task(3, 0.25)))
    assert keys.fingerprint(_ArrayData(Tagged("a"))) != keys.fingerprint(_ArrayData(Tagged("b")))
    assert keys.fingerprint(_ArrayData({1, 2})) != keys.fingerprint(_ArrayData({1, 3}))
    assert keys.fingerprint(_ArrayData({"a": 1})) != keys.fingerprint(_ArrayData({"a": 2}))


@pytest.mark.parametrize("value", [object(), lambda x: x, torch.Generator(), iter([1])], ids=lambda v: type(v).__name__)
def test_an_unknown_attribute_type_is_a_loud_error(value):
    """Data the key cannot see would let a change reuse stale weights: fingerprint and fit_or_load refuse, naming
    the attribute and saying what to do."""
    with pytest.raises(TypeError, match=r"cannot fingerprint _ArrayData\.table\b.*fingerprint\(\) method"):
        keys.fingerprint(_ArrayData(value))
    with pytest.raises(TypeError, match=r"_ArrayData\.table\[1\]\['k'\]"):
        keys.fingerprint(_ArrayData([1, {"k": value}]))
    with pytest.raises(TypeError, match="cannot fingerprint"):
        _fit(_ArrayData(value))


def test_fingerprint_of_fashion_mnist_sees_its_images(data_dir):
    """FashionMNIST holds its images in ImageSet objects: how many of them it keeps changes the key."""
    from qkv.data import FashionMNIST

    a = FashionMNIST(64, num_train=100, num_val=50, data_dir=data_dir)
    assert keys.fingerprint(a) == keys.fingerprint(FashionMNIST(64, num_train=100, num_val=50, data_dir=data_dir))
    assert keys.fingerprint(FashionMNIST(64, num_train=101, num_val=50, data_dir=data_dir)) != keys.fingerprint(a)
    assert keys.fingerprint(FashionMNIST(64, num_train=100, num_val=49, data_dir=data_dir)) != keys.fingerprint(a)


def test_file_is_readable_by_others_and_no_temporary_file_is_left():
    fitted, _ = _fit()
    assert stat.S_IMODE(fitted.path.stat().st_mode) & 0o044 == 0o044
    assert [p.name for p in fitted.path.parent.iterdir() if p.suffix == ".tmp"] == []


def test_no_training_where_it_is_forbidden(monkeypatch):
    """QKV_NO_TRAIN (which the grader's sandbox sets) forbids training, not loading; nothing else does: the library
    knows no grader, and nbgrader's own runs (validate) train as a student's kernel would."""
    monkeypatch.setenv(weights.NO_TRAIN_ENV, "1")
    with pytest.raises(weights.NotCached, match="QKV_NO_TRAIN is set"):
        _fit()
    monkeypatch.delenv(weights.NO_TRAIN_ENV)
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")
    assert _fit()[0].trained  # trains and saves
    monkeypatch.setenv(weights.NO_TRAIN_ENV, "1")
    assert not _fit()[0].trained  # loading is allowed


def test_the_graders_sandbox_forbids_training():
    from autograder.sandbox import sandbox_env

    assert sandbox_env(None)[weights.NO_TRAIN_ENV] == "1"


def test_read_only_folder_loads(tmp_path, monkeypatch):
    fitted, _ = _fit()
    folder = fitted.path.parent
    os.chmod(folder, 0o555)
    try:
        again, _ = _fit()
        assert not again.trained and _same_weights(fitted.model, again.model)
    finally:
        os.chmod(folder, 0o755)


def test_unwritable_folder_still_returns_the_trained_model(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the folder should be")
    monkeypatch.setenv(weights.TRAINED_ENV, str(blocked / "trained"))
    messages = []
    fitted, _ = _fit(log=messages)
    assert fitted.trained and any("kept in memory" in m for m in messages)


def test_bad_arguments_say_what_to_do():
    with pytest.raises(ValueError, match="seed"):
        weights.fit_or_load("x", _build(), _Data(), Trainer(1, device="cpu", lr=0.1), config=_Config())
    with pytest.raises(TypeError, match="dataclass"):
        weights.fit_or_load("x", _build(), _Data(), Trainer(1, seed=0, device="cpu", lr=0.1), config=[1])
    with pytest.raises(TypeError, match="nn.Module"):
        weights.fit_or_load("x", lambda: 3, _Data(), Trainer(1, seed=0, device="cpu", lr=0.1), config=_Config())


def test_fingerprint_sees_content_and_settings():
    assert keys.fingerprint(_Data()) == keys.fingerprint(_Data())
    assert keys.fingerprint(_Data()) != keys.fingerprint(_Data(shift=1e-3))
    assert keys.fingerprint(_Data()) != keys.fingerprint(_Data(batch_size=9))


def test_fingerprint_of_mtfraeng(data_dir):
    from qkv.data import MTFraEng

    a, b = MTFraEng(128, data_dir=data_dir), MTFraEng(128, data_dir=data_dir)
    assert keys.fingerprint(a) == keys.fingerprint(b)
    assert keys.fingerprint(MTFraEng(64, data_dir=data_dir)) != keys.fingerprint(a)
    assert keys.fingerprint(MTFraEng(128, num_train=500, data_dir=data_dir)) != keys.fingerprint(a)


def test_the_grader_binds_the_same_folder(tmp_path, monkeypatch):
    """autograder.sandbox finds the trained-weights folder without importing torch; it must be trained_dir()."""
    from autograder import sandbox

    for env in ({}, {"QKV_CACHE_DIR": str(tmp_path / "cache")}, {weights.TRAINED_ENV: str(tmp_path / "w")}):
        monkeypatch.delenv(weights.TRAINED_ENV, raising=False)
        monkeypatch.delenv("QKV_CACHE_DIR", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        assert sandbox.trained_paths() == []  # not there yet: nothing to bind
        weights.trained_dir().mkdir(parents=True)
        assert sandbox.trained_paths() == [weights.trained_dir().resolve()]
        assert weights.trained_dir().resolve() in sandbox.visible_paths()


_WARMED = []


def _warm_probe():
    _WARMED.append(_fit()[0])
    return _WARMED[-1]


def test_release_warms_every_recipe():
    """`make release` runs each recipe of the sections' front matter (``trains:``), so the grader finds the weights;
    every recipe named there is a callable that exists."""
    import importlib
    import types

    from autograder import release
    from course.section import sections

    probe = types.SimpleNamespace(trains=("tests.unit.qkv.test_recipes_weights:_warm_probe",))
    out = release.warm_trained([probe])
    again = release.warm_trained([probe])
    assert out[0].trained and not again[0].trained and again[0].path == out[0].path
    recipes = [recipe for section in sections() for recipe in section.trains]
    assert "qkv.recipes.vit:train_fashion_mnist" in recipes and len(recipes) == len(set(recipes)) == 7
    for recipe in recipes:
        module, _, function = recipe.partition(":")
        assert callable(getattr(importlib.import_module(module), function))


def test_only_fit_or_load_of_its_module_counts_in_the_source_hash():
    """Editing qkv.recipes.weights' messages or docs must not throw every cached model away; editing fit_or_load
    (seeding, building, training) must."""
    import inspect
    import textwrap

    expected = keys.code_of(textwrap.dedent(inspect.getsource(weights.fit_or_load)))
    assert keys._source_of("qkv.recipes.weights") == expected
    assert keys._source_of("qkv.training") == keys.code_of(keys._module_file("qkv.training").read_text())


def test_the_code_hash_ignores_docstrings_comments_and_layout_but_not_code():
    code = 'def f(x):\n    """Doubles."""\n    return 2 * x  # twice\n'
    same = [
        'def f(x):\n    """Doubles x (D2L 11.1), a better docstring."""\n    return 2 * x\n',
        "def f(x):\n    # no docstring, a comment\n    return (2 *\n            x)\n",
    ]
    assert all(keys.code_of(other) == keys.code_of(code) for other in same)
    assert keys.code_of('def f(x):\n    """Doubles."""\n    return 3 * x\n') != keys.code_of(code)
    assert keys.code_of('class C:\n    """Only a docstring."""\n') == keys.code_of("class C:\n    pass\n")


class _CountingData(_Data):
    """``_Data`` with a validation loader, counting the batches each loader yields."""

    def __init__(self):
        super().__init__(n=64, batch_size=8)
        self.seen = {"train": 0, "val": 0}

    def _counted(self, part):
        data = self

        class Loader:  # re-iterable, like a DataLoader: one pass per epoch
            def __iter__(self):
                dataset = torch.utils.data.TensorDataset(data.X, data.y[:, None])
                for batch in torch.utils.data.DataLoader(dataset, data.batch_size):
                    data.seen[part] += 1
                    yield batch

        return Loader()

    def train_dataloader(self):
        return self._counted("train")

    def val_dataloader(self):
        return self._counted("val")


def test_a_smoke_run_trains_one_epoch_of_n_batches_under_its_own_key(monkeypatch):
    """QKV_TRAIN_SMOKE=N: one epoch, at most N batches of each loader (64 examples in batches of 8 would be 8 per
    epoch, 3 epochs asked), a key that records N; a real run never loads the smoke weights, nor the reverse."""
    monkeypatch.setenv(weights.SMOKE_ENV, "2")
    data = _CountingData()
    smoke, messages = _fit(data, epochs=3)
    assert smoke.trained and smoke.smoke == 2 and smoke.key["smoke"] == 2
    assert smoke.history["epoch"] == [1], "one epoch, whatever the trainer asks"
    assert data.seen == {"train": 2, "val": 2}, "two batches of each loader, no more"
    assert "smoke run" in messages[0] and "-smoke-" in smoke.path.name
    assert not _fit(_CountingData(), epochs=3)[0].trained, "the same smoke run loads"

    monkeypatch.delenv(weights.SMOKE_ENV)
    data = _CountingData()
    real, _ = _fit(data, epochs=3)
    assert real.trained and real.smoke == 0 and "smoke" not in real.key, "a real run never loads smoke weights"
    assert real.history["epoch"] == [1, 2, 3] and data.seen == {"train": 24, "val": 24}
    assert real.path != smoke.path


@pytest.mark.parametrize("value", ["-1", "two", "1.5"])
def test_a_bad_smoke_setting_says_what_it_wants(monkeypatch, value):
    monkeypatch.setenv(weights.SMOKE_ENV, value)
    with pytest.raises(ValueError, match="positive number of batches"):
        _fit()


def test_a_smoke_book_is_built_apart_from_the_real_one(monkeypatch):
    """The execution cache of a smoke build must not be the one make book reuses."""
    from publish import build_book

    monkeypatch.delenv(weights.SMOKE_ENV, raising=False)
    real = build_book.default_out("student")
    monkeypatch.setenv(weights.SMOKE_ENV, "2")
    assert build_book.default_out("student") == real.parent / "smoke" / "student"
