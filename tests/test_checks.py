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


def test_load_exact_copies_matching_weights_and_names_what_differs():
    torch.manual_seed(0)
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.LayerNorm(4))
    weights = {k: torch.randn_like(v) for k, v in module.state_dict().items()}
    checks.load_exact(module, weights, "the block")
    for k, v in module.state_dict().items():
        assert torch.equal(v, weights[k])
    missing = {k: v for k, v in weights.items() if k != "1.bias"}
    with pytest.raises(checks.CheckFailed, match=r"(?s)the block has the parameters.*1\.bias"):
        checks.load_exact(module, missing, "the block")
    wrong_shape = {**weights, "0.weight": torch.zeros(4, 5)}
    with pytest.raises(checks.CheckFailed, match=r"(?s)0\.weight"):
        checks.load_exact(module, wrong_shape, "the block")
    extra = {**weights, "2.weight": torch.zeros(4)}
    with pytest.raises(checks.CheckFailed, match=r"(?s)2\.weight"):
        checks.load_exact(module, extra, "the block")
    assert torch.equal(module.state_dict()["0.weight"], weights["0.weight"])  # a failed check loads nothing


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


# ---------------------------------------------------------------- short failures


def test_a_failed_check_is_a_checkfailed_which_is_an_assertion_error():
    assert issubclass(checks.CheckFailed, AssertionError)
    for call in (
        lambda: checks.check_close(torch.zeros(2), torch.ones(2)),
        lambda: checks.check_shape(torch.zeros(2), (3,)),
        lambda: checks.check_scalar(1.0, 2.0),
        lambda: checks.check_true(False, "false"),
    ):
        with pytest.raises(checks.CheckFailed):
            call()


def test_every_line_of_a_message_fits_nbgrader_validates_width_however_long_the_inputs():
    long_name = "the weights of the attention pooling over every key of the database, " * 3
    long_hint = "divide the differences by sigma before the kernel, then normalise each row; " * 4
    cases = [
        lambda: checks.check_close(torch.zeros(3), torch.ones(3), long_name, hint=long_hint),
        lambda: checks.check_true(["x" * 300], long_name, hint=long_hint),
        lambda: checks.check_scalar(1.0, 2.0, long_name, hint="a_very_long_identifier_" * 10),
        lambda: checks.check_shape(torch.zeros(2), tuple(range(1, 40)), long_name, hint=long_hint),
    ]
    for call in cases:
        with pytest.raises(checks.CheckFailed) as err:
            call()
        lines = str(err.value).splitlines()
        assert max(len(line) for line in lines) <= checks.WIDTH == 83, lines
        assert "".join(line.strip() for line in lines if "hint" in line or line.startswith("        ")), lines
    # nothing of the hint is lost in the wrapping
    with pytest.raises(checks.CheckFailed) as err:
        checks.check_close(torch.zeros(3), torch.ones(3), "w", hint=long_hint)
    hint = " ".join(line.strip() for line in str(err.value).split("hint: ", 1)[1].splitlines())
    assert hint == long_hint.strip()


def test_regions_say_where_the_reference_differs_and_pick_that_regions_hint():
    keep = torch.tensor([[True, True, False], [True, False, False]])
    expected = torch.tensor([[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    hints = {"masked keys": "fill with -1e6", "valid keys": "check the lengths"}
    regions = {"masked keys": ~keep, "valid keys": keep}
    wrong_mask = expected.clone()
    wrong_mask[1, 2] = 0.3
    with pytest.raises(checks.CheckFailed) as err:
        checks.check_close(wrong_mask, expected, "weights", hint=hints, regions=regions)
    message = str(err.value)
    assert message.splitlines()[0] == "weights differs from the reference in the masked keys"
    assert "largest error at (1, 2), in the masked keys; none in the valid keys" in " ".join(message.split())
    assert "hint: fill with -1e6" in message and "lengths" not in message
    wrong_valid = expected.clone()
    wrong_valid[0, 0], wrong_valid[1, 1] = 0.9, 0.01
    with pytest.raises(checks.CheckFailed) as err:
        checks.check_close(wrong_valid, expected, "weights", hint=hints, regions=regions)
    message = str(err.value)
    assert "in the valid keys" in message.splitlines()[0] and "hint: check the lengths" in message
    assert "none in the masked keys" not in message  # the masked keys are wrong too
    checks.check_close(expected, expected, "weights", hint=hints, regions=regions)  # passes silently


_IPYTHON = r"""
import sys, torch
from IPython.core.interactiveshell import InteractiveShell
from qkv import checks

shell = InteractiveShell.instance(colors="nocolor")
shown = []
shell._showtraceback = lambda etype, value, stb: shown.append((etype.__name__, str(value), stb))
assert checks.install(shell)
shell.run_cell("import torch\nfrom qkv import checks")
shell.run_cell("# Exercise 2 (2 points): write sharp.\ndef sharp(q):\n    # YOUR CODE HERE\n"
               "    raise NotImplementedError()")
shell.run_cell("class Att:\n    def forward(self):\n        raise NotImplementedError()")
shell.run_cell("sharp(1)")
shell.run_cell("Att().forward()")
shell.run_cell("checks.check_close(torch.zeros(2), torch.ones(2), 'weights', hint='h')")
shell.run_cell("torch.ones(2, device='meta').tolist()")
import json; print(json.dumps(shown))
"""


def test_install_shows_a_failed_check_as_its_message_and_names_an_unwritten_exercise():
    import json
    import subprocess
    import sys

    assert checks.install() is False  # outside IPython: nothing to do
    out = subprocess.run([sys.executable, "-c", _IPYTHON], capture_output=True, text=True, check=True).stdout
    stub, method, check, torch_error = json.loads(out.splitlines()[-1])
    assert stub[0] == "NotImplementedError"
    assert stub[1] == (
        "Exercise 2 (sharp) is not written yet: replace `raise NotImplementedError()` in its cell with your code."
    )
    assert " ".join(stub[2]) == stub[1] and all(len(line) <= checks.WIDTH for line in stub[2])
    assert method[1].startswith("Att is not written yet")  # no header line: the name alone
    assert check[0] == "CheckFailed" and check[2] == check[1].splitlines()  # the message, no frames
    assert check[2][0] == "weights differs from the reference" and not any("checks.py" in s for s in check[2])
    assert torch_error[0] == "NotImplementedError" and "meta" in torch_error[1]  # torch's own: left alone
    assert any("Traceback" in line for line in torch_error[2])
