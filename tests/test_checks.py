"""qkv.checks: the notebooks' test helpers give readable messages and cannot be fooled by student objects."""

from __future__ import annotations

import types

import pytest
import torch

from qkv import attention, checks


def test_check_close_passes_within_tolerance_and_names_the_worst_entry():
    checks.check_close(torch.ones(2, 3) + 1e-7, torch.ones(2, 3))
    got = torch.ones(2, 3)
    got[1, 2] = 1.5
    with pytest.raises(AssertionError) as err:
        checks.check_close(got, torch.ones(2, 3), "weights", hint="normalise each row")
    message = str(err.value)
    assert "weights differs" in message and "(1, 2)" in message
    assert "expected: 1" in message and "got:      1.5" in message and "hint: normalise each row" in message


def test_check_close_rejects_wrong_shapes_nan_and_non_tensors():
    with pytest.raises(AssertionError, match="wrong shape"):
        checks.check_close(torch.ones(3, 2), torch.ones(2, 3))
    with pytest.raises(AssertionError, match="NaN"):
        checks.check_close(torch.tensor([float("nan")]), torch.tensor([0.0]))
    with pytest.raises(AssertionError, match="torch.Tensor"):
        checks.check_close([1.0, 2.0], torch.tensor([1.0, 2.0]))


def test_an_object_whose_eq_is_always_true_does_not_pass():
    class Liar:
        shape = (2,)

        def __eq__(self, other):
            return True

        def __getattr__(self, name):
            return lambda *a, **k: self

    with pytest.raises(AssertionError, match="torch.Tensor"):
        checks.check_close(Liar(), torch.tensor([1.0, 2.0]))

    class SubTensor(torch.Tensor):
        def __sub__(self, other):
            return torch.zeros(2)

    with pytest.raises(AssertionError, match="torch.Tensor"):
        checks.check_close(torch.zeros(2).as_subclass(SubTensor), torch.ones(2))


def test_rebinding_torch_functions_after_import_changes_nothing(monkeypatch):
    monkeypatch.setattr(torch, "allclose", lambda *a, **k: True)
    monkeypatch.setattr(torch, "abs", lambda x: torch.zeros_like(x))
    monkeypatch.setattr(torch, "sub", lambda a, b: torch.zeros_like(a))
    monkeypatch.setattr(torch.Tensor, "__eq__", lambda self, other: True)
    monkeypatch.setattr(torch.Tensor, "tolist", lambda self: [0.0])
    with pytest.raises(AssertionError, match="differs"):
        checks.check_close(torch.zeros(3), torch.ones(3))
    assert checks.trusted.softmax is torch._C._VariableFunctions.softmax


def test_check_scalar_and_check_true():
    checks.check_scalar(torch.tensor(2.0), 2.0)
    checks.check_scalar(3, 3.0)
    with pytest.raises(AssertionError, match="single number"):
        checks.check_scalar(torch.ones(2), 1.0)
    with pytest.raises(AssertionError, match="expected value"):
        checks.check_scalar(1.5, 2.0)
    with pytest.raises(AssertionError):
        checks.check_true(1, "truthy but not True")
    checks.check_true(True, "fine")


def test_forbid_reference_catches_calls_aliases_subclasses_and_closures():
    ref = (attention, "masked_softmax")

    def own(X, valid_lens):
        return torch.softmax(X, dim=-1)

    with checks.forbid_reference(own, ref):
        own(torch.zeros(1, 1, 2), None)
    assert attention.masked_softmax.__name__ == "masked_softmax", "the reference is restored afterwards"

    masked_softmax = attention.masked_softmax
    namespace = {"attention": attention, "masked_softmax": masked_softmax}
    exec("def via_module(X, v):\n    return attention.masked_softmax(X, v)", namespace)
    exec("def via_alias(X, v):\n    return masked_softmax(X, v)", namespace)
    for fn in (namespace["via_alias"], masked_softmax):
        with pytest.raises(AssertionError, match="reference"), checks.forbid_reference(fn, ref):
            pass
    with pytest.raises(AssertionError, match="reference"), checks.forbid_reference(namespace["via_module"], ref):
        namespace["via_module"](torch.zeros(1, 1, 2), None)

    def make_closure():
        hidden = attention.masked_softmax
        return lambda X, v: hidden(X, v)

    with pytest.raises(AssertionError, match="reference"), checks.forbid_reference(make_closure(), ref):
        pass

    class Sub(attention.DotProductAttention):
        pass

    with pytest.raises(AssertionError, match="subclasses"):
        with checks.forbid_reference(Sub, (attention, "DotProductAttention")):
            pass
    assert isinstance(attention.DotProductAttention, type)


def test_forbid_reference_restores_even_when_the_block_fails():
    original = attention.masked_softmax
    with pytest.raises(RuntimeError), checks.forbid_reference(lambda: None, (attention, "masked_softmax")):
        raise RuntimeError("boom")
    assert attention.masked_softmax is original
    assert isinstance(checks.trusted, types.SimpleNamespace)
