"""The mode class (D2L 3.2.4, 10.7.7, 11.9.3): every ``qkv`` function that evaluates, generates, decodes or loads a
model leaves the model's mode as it found it, or, for loading, returns the mode a freshly trained model has (eval).

In training mode dropout is on; in eval mode it is off. A function that evaluates (a loss, a perplexity, a
translation, attention weights, generated text) must run the model in eval mode whatever mode it is given, and give
each part back the mode it had, also when it raises: a caller that evaluates between epochs goes on training with
dropout, and one that shows a trained model goes on without. A function that loads cached weights returns the model in
eval mode, as :func:`qkv.recipes.weights.fit_or_load` leaves a model it has just trained.

:data:`REGISTRY` holds every such function with the case that checks it. :func:`scan` reads every module of ``qkv``
for functions that switch a mode or gradients (``.eval()``, ``.train(...)``, ``torch.no_grad``,
``torch.inference_mode``, :func:`qkv.training.evaluating`) or that call a registered evaluating or loading function,
so that a new one fails :func:`test_every_function_that_switches_modes_is_registered` until it has its case here.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

from qkv import bahdanau, costlab, lm, transformer, translate, vit
from qkv.data import FashionMNIST, MTFraEng
from qkv.figures import multihead_attention as mh
from qkv.figures import transformer as fig_transformer
from qkv.modern_decoder import ModernConfig, ModernDecoderLM
from qkv.pretraining import DecoderOnlyLM, GPTConfig
from qkv.recipes import lm as lm_recipes
from qkv.recipes import modern as modern_recipes
from qkv.recipes import offsets
from qkv.recipes import translate as translate_recipe
from qkv.recipes import vit as vit_recipe
from qkv.recipes import weights as trained
from qkv.recipes.weights import Fitted
from qkv.training import Trainer, evaluating
from qkv.widgets import bahdanau_attention as w_bahdanau
from qkv.widgets import large_pretraining_transformers as w_pretraining
from qkv.widgets import transformer as w_transformer

QKV = Path(__file__).resolve().parents[3] / "lib" / "qkv"
#: What marks a function that switches a model's mode or turns gradients off.
SWITCHES = {"eval", "train"}  # method calls: model.eval(), model.train(was_training)
GRAD_NAMES = {"no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "evaluating"}
P = 0.5  # dropout of every case's model: in training mode about half of the activations change


# --- the kinds of case ---------------------------------------------------------------------------------------------


@dataclass
class Evaluates:
    """``run(model)`` on ``make()``'s model (with dropout) in training, eval and mixed mode gives one result, and
    leaves every part's mode as it was, also when the model raises."""

    make: Callable[[], nn.Module]
    run: Callable[[nn.Module], object]


@dataclass
class Loads:
    """``run()`` twice (a smoke run trains, the second call loads): each returns a model (or a Fitted) in eval mode."""

    run: Callable[[], object]


@dataclass
class Trains:
    """``run(model)`` on ``make()``'s model in eval mode leaves it in training mode, the mode it trained in."""

    make: Callable[[], nn.Module]
    run: Callable[[nn.Module], object]


@dataclass
class Builds:
    """``run()`` returns the models it builds; each is in ``mode`` ("train" as nn.Module builds, or "eval")."""

    run: Callable[[], list]
    mode: str


@dataclass
class Delegates:
    """Gets its models' modes from the registered functions ``callees`` only (it calls them and switches nothing)."""

    callees: tuple[str, ...]


@dataclass
class NoModel:
    """Switches gradients or builds a model of its own without taking or returning one; ``why`` says so."""

    why: str


# --- data and models the cases share --------------------------------------------------------------------------------


def _dropout_everywhere(model: nn.Module) -> nn.Module:
    """Every nn.Dropout of ``model`` at p = P, so that training mode changes what the model computes."""
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = P
    return model


@functools.cache
def _mt() -> MTFraEng:
    return MTFraEng(8, num_train=32, num_val=8)


@functools.cache
def _chars() -> lm.CharLMData:
    return lm.CharLMData(num_steps=16, batch_size=4, stride=4096, val_fraction=0.02)


@functools.cache
def _fashion() -> FashionMNIST:
    return FashionMNIST(16, num_train=64, num_val=32)


def _gpt(vocab_size=11, max_len=16) -> DecoderOnlyLM:
    cfg = GPTConfig(vocab_size, num_hiddens=16, num_heads=2, num_blks=2, ffn_num_hiddens=32, dropout=P, max_len=max_len)
    return DecoderOnlyLM(cfg)


def _modern(vocab_size=11, max_len=16) -> ModernDecoderLM:
    cfg = ModernConfig(vocab_size, num_hiddens=16, num_heads=2, num_kv_heads=1, num_blks=2, max_len=max_len)
    return ModernDecoderLM(cfg)


def _translator():
    mt = _mt()
    return transformer.make_transformer(
        len(mt.src_vocab), len(mt.tgt_vocab), 16, 32, 2, 2, P, tgt_pad=mt.tgt_vocab["<pad>"]
    )


def _bahdanau():
    mt = _mt()
    return bahdanau.make_bahdanau(len(mt.src_vocab), len(mt.tgt_vocab), 8, 16, 2, P, tgt_pad=mt.tgt_vocab["<pad>"])


def _classifier():
    return nn.Sequential(nn.Linear(3, 32), nn.ReLU(), nn.Dropout(P), nn.Linear(32, 4))  # (B, 3) -> (B, 4)


def _classes():
    g = torch.Generator().manual_seed(1)
    return [(torch.randn(16, 3, generator=g), torch.randint(0, 4, (16,), generator=g)) for _ in range(2)]


class _Loaders:
    """A data module of a few fixed batches, training and validation alike."""

    def __init__(self, batches):
        self.batches = batches

    def train_dataloader(self):
        return self.batches

    def val_dataloader(self):
        return self.batches


def _under_evaluating(model):
    with evaluating(model):
        Y = model(_classes()[0][0])  # (B, 4)
    assert not Y.requires_grad, "evaluating must turn gradients off"
    return Y


def _trainer() -> Trainer:
    return Trainer(1, device="cpu", seed=0, optimizer="sgd", lr=0.1, progress=False)


def _recipe(**model) -> vit_recipe.ViTRecipe:
    sizes = {"img_size": 8, "patch_size": 4, "num_hiddens": 16, "mlp_num_hiddens": 16, "num_heads": 2, "num_blks": 1}
    return vit_recipe.ViTRecipe(vit.ViTConfig(**{**sizes, **model}), epochs=1)


def _small_vit() -> vit.ViT:
    return vit.ViT(8, 4, 16, 16, 2, 1, P, P, in_channels=1)  # (B, 1, 8, 8) -> (B, 10)


def _images():
    g = torch.Generator().manual_seed(2)
    return [(torch.rand(8, 1, 8, 8, generator=g), torch.randint(0, 10, (8,), generator=g)) for _ in range(2)]


def _recipe_evaluate(model):
    trainer = vit_recipe.RecipeTrainer(_recipe(), seed=0)
    return trainer.evaluate(model, _images()), trainer.history["val_acc"]


def _generate(model):
    prompt = torch.tensor([[1, 2, 3], [4, 5, 6]])  # (B, T)
    sampled = model.generate(prompt, 20, temperature=1.0, generator=torch.Generator().manual_seed(0))  # past max_len
    return sampled, model.generate(prompt[0], 5, greedy=True)


def _predict_step(model):
    g = torch.Generator().manual_seed(3)
    src = torch.randint(3, len(_mt().src_vocab), (3, 5), generator=g)  # (B, T)
    tgt = torch.full((3, 5), _mt().tgt_vocab["<bos>"])  # (B, T): <bos> first
    return model.predict_step((src, tgt, torch.tensor([5, 3, 1]), tgt), "cpu", 6, save_attention_weights=True)


class _HeldOut:
    """Held-out windows for lm.perplexity: X and Y (B, T) of token ids."""

    def __init__(self, vocab_size):
        g = torch.Generator().manual_seed(4)
        self.X, self.Y = torch.randint(0, vocab_size, (2, 4, 8), generator=g)  # (B, T) each

    def val_dataloader(self):
        return [(self.X, self.Y)]


def _offset_task() -> mh.OffsetTask:
    return mh.OffsetTask(steps=2, batch_size=8)


def _offset_reader():
    return _dropout_everywhere(mh.OffsetReader(_offset_task()))


def _offsets():
    return torch.randint(0, 8, (4, 10), generator=torch.Generator().manual_seed(6))  # (B, T)


def _decoder():
    return transformer.TransformerDecoder(10, 16, 32, 2, 2, P)


def _token_by_token(decoder):
    g = torch.Generator().manual_seed(5)
    enc, tokens = torch.randn(2, 4, 16, generator=g), torch.randint(0, 10, (2, 5), generator=g)  # (B, T_src, N), (B, T)
    return (
        fig_transformer.decode_token_by_token(decoder, enc, tokens),
        fig_transformer.decode_token_by_token(decoder, enc, tokens, d2l_positions=True),
    )


def _quiet(*args):
    pass


def _train_d2l_one_epoch():
    """The Bahdanau translator through qkv.recipes.translate.train_d2l, one epoch."""
    return translate_recipe.train_d2l(
        "bahdanau", bahdanau.BahdanauConfig(), _mt(), epochs=1, progress=False, log=_quiet
    )[0]


def _fit_or_load_mixed():
    """fit_or_load on a build whose model comes with one part in eval mode, the rest training."""

    def build():
        model = _classifier()
        model[0].eval()
        return model

    return trained.fit_or_load("modes", build, _Loaders(_classes()), _trainer(), config={"p": P}, log=_quiet)


def _contender_modules():
    built = [c.setup(1, 8, 4)[0] for c in costlab.contenders("cpu")]  # (module or function, inputs) each
    return [m for m in built if isinstance(m, nn.Module)]


#: Every qkv function that switches a model's mode or gradients, or evaluates or loads a model: "module:qualname".
REGISTRY = {
    # training: evaluation between epochs gives the mode back; training itself ends in training mode
    "qkv.training:evaluating": Evaluates(_classifier, _under_evaluating),
    "qkv.training:Trainer.evaluate": Evaluates(_classifier, lambda m: _trainer().evaluate(m, _classes())),
    "qkv.training:Trainer.fit": Trains(_classifier, lambda m: _trainer().fit(m, _Loaders(_classes()))),
    "qkv.training:Trainer.fit_epoch": Trains(_classifier, lambda m: _trainer().fit(m, _Loaders(_classes()))),
    "qkv.training:Trainer._fit_epochs": Trains(_classifier, lambda m: _trainer().fit(m, _Loaders(_classes()))),
    "qkv.recipes.vit:RecipeTrainer.evaluate": Evaluates(_small_vit, _recipe_evaluate),
    "qkv.recipes.vit:ViTRecipe.build": Builds(lambda: [_recipe().build(), vit_recipe.CNN_RECIPE.build()], "train"),
    # generating, decoding, evaluating
    "qkv.pretraining:DecoderOnlyLM.generate": Evaluates(_gpt, _generate),
    "qkv.modern_decoder:CachedLM.generate": Evaluates(_modern, _generate),
    "qkv.seq2seq:EncoderDecoder.predict_step": Evaluates(_translator, _predict_step),
    "qkv.lm:perplexity": Evaluates(_gpt, lambda m: lm.perplexity(m, _HeldOut(11))),
    "qkv.translate:translate": Evaluates(_translator, lambda m: translate.translate(m, _mt(), ["go .", "i'm home ."])),
    "qkv.translate:evaluate_bleu": Evaluates(
        _bahdanau, lambda m: translate.evaluate_bleu(m, _mt(), [("go .", "va !"), ("hi .", "salut .")])
    ),
    "qkv.figures.transformer:decode_token_by_token": Evaluates(_decoder, _token_by_token),
    "qkv.figures.transformer:decode_with_attention": Evaluates(
        _translator, lambda m: fig_transformer.decode_with_attention(m, _mt(), "i'm home .")
    ),
    "qkv.figures.transformer:translation_attention": Evaluates(
        _translator, lambda m: fig_transformer.translation_attention(m, _mt(), "go .")
    ),
    "qkv.figures.transformer:decoding_cost": NoModel("times an untrained decoder it builds in eval mode"),
    "qkv.widgets.transformer:cross_attention": Evaluates(
        _translator, lambda m: w_transformer.cross_attention(m, _mt(), "i'm home .")
    ),
    "qkv.widgets.transformer:cross_attention_explorer": Delegates(("cross_attention",)),
    "qkv.widgets.bahdanau_attention:decode_sentence": Evaluates(
        _bahdanau, lambda m: w_bahdanau.decode_sentence(m, _mt(), "i'm home .")
    ),
    "qkv.widgets.bahdanau_attention:decoding_explorer": Delegates(("decode_sentence",)),
    "qkv.widgets.large_pretraining_transformers:next_char_logits": Evaluates(
        lambda: _gpt(len(_chars().vocab)), lambda m: w_pretraining.next_char_logits(m, _chars(), "the time")
    ),
    "qkv.widgets.large_pretraining_transformers:sampling_grid": Delegates(("next_char_logits",)),
    "qkv.widgets.large_pretraining_transformers:sampling_explorer": Delegates(("next_char_logits", "sampling_grid")),
    "qkv.figures.multihead_attention:head_weights": Evaluates(_offset_reader, lambda m: mh.head_weights(m, _offsets())),
    "qkv.figures.multihead_attention:head_offsets": Evaluates(
        _offset_reader, lambda m: mh.head_offsets(m, _offset_task())
    ),
    "qkv.figures.multihead_attention:head_importance": Evaluates(
        _offset_reader, lambda m: mh.head_importance(m, _offset_task())
    ),
    "qkv.figures.multihead_attention:plot_head_weights": Delegates(("head_weights",)),
    # loading from the weight cache
    "qkv.recipes.weights:fit_or_load": Loads(_fit_or_load_mixed),
    "qkv.recipes.translate:train_d2l": Loads(_train_d2l_one_epoch),
    "qkv.recipes.translate:train_bahdanau": Delegates(("train_d2l",)),
    "qkv.recipes.translate:train_transformer": Delegates(("train_d2l",)),
    "qkv.recipes.lm:train_gpt": Loads(lambda: lm_recipes.train_gpt(_chars(), log=_quiet)[0]),
    "qkv.recipes.lm:train_gru": Loads(lambda: lm_recipes.train_gru(_chars(), log=_quiet)[0]),
    "qkv.recipes.lm:_gpt": Delegates(("fit_or_load",)),
    "qkv.recipes.lm:scaling_study": Delegates(("_gpt", "perplexity")),
    "qkv.recipes.lm:warm": Delegates(("train_gpt", "train_gru", "scaling_study")),
    "qkv.recipes.modern:warm": Delegates(("train_pair",)),
    "qkv.recipes.modern:train_pair": Loads(lambda: modern_recipes.train_pair(_chars(), log=_quiet)["modern"]["fitted"]),
    "qkv.recipes.vit:train_fashion_mnist": Loads(
        lambda: vit_recipe.train_fashion_mnist(_recipe(img_size=28, patch_size=7), data=_fashion(), log=_quiet)[0]
    ),
    "qkv.recipes.vit:train_cnn": Loads(lambda: vit_recipe.train_cnn(data=_fashion(), log=_quiet)[0]),
    "qkv.recipes.offsets:fit_offset_reader": Loads(lambda: offsets.fit_offset_reader(_offset_task())),
    "qkv.recipes.offsets:trained_offset_reader": Loads(lambda: offsets.trained_offset_reader(_offset_task())),
    "qkv.figures.chapter.panel04_bahdanau:attention_map": Delegates(("train_bahdanau", "translate")),
    "qkv.figures.chapter.panel05_multihead:heads": Delegates(("trained_offset_reader", "head_weights", "head_offsets")),
    # the attention-cost lab builds and times its own modules
    "qkv.costlab.contenders:contenders": Builds(_contender_modules, "eval"),
    "qkv.costlab.contenders:sdpa_backends": NoModel("tries PyTorch's attention kernels on random tensors"),
    "qkv.costlab.sweep:run_sweep": NoModel("times the contenders' modules (built in eval mode) without gradients"),
}


# --- the scan -------------------------------------------------------------------------------------------------------


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _functions(root: Path = QKV):
    """Every function and method of the package at ``root``: ``{"module:qualname": ast node}`` (a nested function
    belongs to the one it is defined in)."""
    found = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                found[f"{prefix}{child.name}"] = child

    for path in sorted(root.rglob("*.py")):
        prefix = _module_name(path, root) + ":"
        visit(ast.parse(path.read_text(encoding="utf-8")), prefix)
    return found


def _switches(fn: ast.AST) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SWITCHES:
            return True
        if isinstance(node, ast.Attribute) and node.attr in GRAD_NAMES:
            return True
        if isinstance(node, ast.Name) and node.id in GRAD_NAMES:
            return True
    return False


def _called_names(fn: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def scan(root: Path = QKV) -> dict[str, str]:
    """The functions of qkv (at ``root``) that must be registered, each with why: it switches a mode or gradients
    itself, or it calls a registered function that evaluates or loads (by name: ``translate``, ``fit_or_load``)."""
    functions = _functions(root)
    must = {name: "switches a mode or gradients" for name, fn in functions.items() if _switches(fn)}
    sources = {
        n.rpartition(":")[2].rpartition(".")[2]: n for n, c in REGISTRY.items() if isinstance(c, Evaluates | Loads)
    }
    for name, fn in functions.items():
        calls = sorted(_called_names(fn) & sources.keys())
        if name not in must and calls:
            must[name] = "calls " + ", ".join(sources[c] for c in calls)
    return must


def test_every_function_that_switches_modes_is_registered():
    missing = {name: why for name, why in scan().items() if name not in REGISTRY}
    assert not missing, (
        "these qkv functions evaluate, generate, decode, load or train a model but have no case in "
        "tests/unit/qkv/test_model_modes.py's REGISTRY, so nothing checks the mode they leave:\n"
        + "\n".join(f"  {name}: {why}" for name, why in sorted(missing.items()))
        + "\nadd each: Evaluates(make, run) for a function that must give the mode back, Loads(run) for one that "
        "returns cached weights, Delegates((callees,)) for one that only calls registered functions."
    )


def test_the_registry_names_existing_functions_only():
    functions = _functions()
    stale = sorted(set(REGISTRY) - functions.keys())
    assert not stale, f"REGISTRY names functions that qkv no longer has: {stale}; remove or rename them"


def test_the_scan_finds_a_new_function_that_switches_modes(tmp_path):
    """The scan is what keeps the registry complete: functions like those above, in a new module, are found."""
    sources = {
        "beam": "def beam(model, X):\n    model.eval()\n    return model(X)\n",
        "under": "import torch\n\n@torch.no_grad()\ndef under(model, X):\n    return model(X)\n",
        "wrapper": "def wrapper(model, data):\n    return translate(model, data, ['go .'])\n",
        "loader": "def loader():\n    return fit_or_load('x', None, None, None, config={})\n",
        "plain": "def plain(model, X):\n    return model(X) + 1\n",
    }
    (tmp_path / "qkv").mkdir()
    (tmp_path / "qkv" / "probe.py").write_text("\n\n".join(sources.values()), encoding="utf-8")
    found = scan(tmp_path / "qkv")
    assert set(found) == {f"qkv.probe:{name}" for name in sources if name != "plain"}, found


# --- the checks -----------------------------------------------------------------------------------------------------


def _modes(model: nn.Module) -> list[tuple[str, bool]]:
    return [(name or "(the model)", m.training) for name, m in model.named_modules()]


def _set_mode(model: nn.Module, mode: str) -> nn.Module:
    """``mode`` "train", "eval", or "mixed": training with its first part held in eval mode (a frozen part)."""
    model.train(mode != "eval")
    if mode == "mixed":
        next(model.children()).eval()
    return model


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.equal(a, b)
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if is_dataclass(a):
        return type(a) is type(b) and all(_same(getattr(a, x.name), getattr(b, x.name)) for x in fields(a))
    return a == b


class _Boom(RuntimeError):
    pass


def _explode(module, args):
    raise _Boom("a forward pass that fails")


def _in_eval_mode(out) -> nn.Module:
    model = out.model if isinstance(out, Fitted) else out
    assert isinstance(model, nn.Module), f"expected a model or a Fitted, got {type(model).__name__}"
    training = [name for name, on in _modes(model) if on]
    assert not training, f"a loaded model must be in eval mode (as a freshly trained one is); in training: {training}"
    return model


@pytest.fixture
def weights(tmp_path, monkeypatch):
    """An empty weight cache and smoke runs (one epoch of two batches), whatever the environment says."""
    monkeypatch.setenv(trained.TRAINED_ENV, str(tmp_path / "trained"))
    monkeypatch.setenv(trained.SMOKE_ENV, "2")
    monkeypatch.delenv(trained.NO_TRAIN_ENV, raising=False)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_the_mode_each_function_leaves(name, weights):
    case = REGISTRY[name]
    if isinstance(case, Evaluates):
        results = {}
        for mode in ("train", "eval", "mixed"):
            torch.manual_seed(0)
            model = _set_mode(case.make(), mode)
            before = _modes(model)
            results[mode] = case.run(model)
            changed = [(part, was) for (part, was), (_, now) in zip(before, _modes(model)) if was != now]
            assert not changed, f"{name} on a model in {mode} mode changed the mode of (part, mode before): {changed}"
        assert _same(results["train"], results["eval"]) and _same(results["mixed"], results["eval"]), (
            f"{name} gives other results for a model in training mode than in eval mode: it must evaluate in eval "
            "mode (no dropout) whatever mode it is given"
        )
        torch.manual_seed(0)
        model = _set_mode(case.make(), "mixed")
        before = _modes(model)
        for m in model.modules():
            m.register_forward_pre_hook(_explode)
        with pytest.raises(_Boom):
            case.run(model)
        assert _modes(model) == before, f"{name} did not give the model its modes back when the model raised"
    elif isinstance(case, Loads):
        first, again = _in_eval_mode(case.run()), case.run()
        _in_eval_mode(again)
        if isinstance(again, Fitted):
            assert not again.trained, f"{name}: the second call must load the weights the first one trained"
        else:
            assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), again.state_dict().values()))
    elif isinstance(case, Trains):
        model = case.make().eval()
        case.run(model)
        assert all(on for _, on in _modes(model)), (
            f"{name} must leave the model in training mode, the mode it trains in"
        )
    elif isinstance(case, Builds):
        built = case.run()
        assert built, f"{name} built no model"
        for model in built:
            wrong = [part for part, on in _modes(model) if on != (case.mode == "train")]
            assert not wrong, f"{name} must build {type(model).__name__} in {case.mode} mode; not so: {wrong}"
    elif isinstance(case, Delegates):
        fn = _functions()[name]
        assert not _switches(fn), f"{name} switches modes itself: give it an Evaluates or Loads case"
        registered = {n.rpartition(":")[2].rpartition(".")[2] for n in REGISTRY}
        for callee in case.callees:
            assert callee in registered, f"{name} delegates to {callee}, which has no case of its own"
            assert callee in _called_names(fn), f"{name} no longer calls {callee}: update its case"
    else:
        assert isinstance(case, NoModel) and case.why
