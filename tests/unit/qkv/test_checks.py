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
    assert "weights: wrong values" in message and "(1, 2)" in message
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
    with pytest.raises(AssertionError, match="wrong values"):
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
    assert message.splitlines()[0] == "weights: wrong values, in the masked keys"
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
    assert check[2][0] == "weights: wrong values" and not any("checks.py" in s for s in check[2])
    assert torch_error[0] == "NotImplementedError" and "meta" in torch_error[1]  # torch's own: left alone
    assert any("Traceback" in line for line in torch_error[2])


# ---------------------------------------------------------------- the common crashes of an answer, in a few lines

_CRASHES = r"""
import json, sys, torch
from IPython.core.interactiveshell import InteractiveShell
from qkv import checks

shell = InteractiveShell.instance(colors="nocolor")
shown = []
shell._showtraceback = lambda etype, value, stb: shown.append((etype.__name__, str(value), stb))
assert checks.install(shell)
cells = [
    "import torch\nfrom torch import nn\nfrom qkv import checks",
    # a stub whose __init__ was answered `return None`: nn.Module's first use fails deep inside PyTorch
    "# Exercise 1 (1 point): write FFN.\nclass FFN(nn.Module):\n    def __init__(self, n):\n        return None\n"
    "\n    def forward(self, X):\n        return X",
    "# Test of exercise 1, locked.\nffn = FFN(3)\nffn(torch.ones(2, 3))",
    # __init__ that makes a layer before (without) super().__init__()
    "# Exercise 2 (1 point): write Enc.\nclass Enc(nn.Module):\n    def __init__(self, n):\n"
    "        self.dense = nn.Linear(n, n)\n\n    def forward(self, X):\n        return self.dense(X)",
    "# Test of exercise 2, locked.\nenc = Enc(3)",
    # forward ends without return; the test unpacks or uses the result
    "# Exercise 3 (2 points): write Blk.\nclass Blk(nn.Module):\n    def forward(self, X, state):\n"
    "        out = X + 1",
    "# Test of exercise 3, locked.\nblk = Blk()\nout, state = blk(torch.ones(2), [None])",
    # a None inside forward
    "# Exercise 4 (1 point): write Pos.\nclass Pos(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n        self.P = None\n\n    def forward(self, X):\n        return X + self.P",
    "# Test of exercise 4, locked.\nPos()(torch.ones(2, 3))",
    # a shape error inside forward
    "# Exercise 5 (3 points): write Att.\nclass Att(nn.Module):\n    def forward(self, queries, keys):\n"
    "        scores = torch.bmm(queries, keys)  # forgot the transpose\n        return scores",
    "# Test of exercise 5, locked.\nAtt()(torch.ones(6, 3, 4), torch.ones(6, 5, 4))",
    # a device mismatch inside a function
    "# Exercise 6 (1 point): write add_row.\ndef add_row(X):\n    row = torch.ones(X.shape[-1])\n"
    "    return torch.cat([X, row[None]], dim=0)",
    "# Test of exercise 6, locked.\nadd_row(torch.ones(2, 3, device='meta'))",
    # an attribute that nothing set
    "# Exercise 7 (1 point): write Net.\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    "\n    def forward(self, X):\n        return self.dense1(X)",
    "# Test of exercise 7, locked.\nNet()(torch.ones(2))",
    "%tb",  # the whole traceback of the error just shown briefly
    # errors that are none of these keep their traceback
    "{}['missing']",
    "raise RuntimeError('something else went wrong')",
    "x = 1\nx.shape",
]
for cell in cells:
    shell.run_cell(cell)
print(json.dumps({"shown": shown, "last": type(getattr(sys, "last_value", None)).__name__}))
"""


def _flat(lines) -> str:
    """The lines as one string, their wrapping and indentation undone."""
    return " ".join(" ".join(lines).split())


def _crashes():
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _CRASHES], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_install_explains_a_forgotten_super_a_none_and_a_shape_error_in_a_few_lines():
    found = _crashes()
    shown = found["shown"]
    assert len(shown) == 11, [s[:2] for s in shown]
    init_none, init_layer, no_return, none_inside, shape, device, unset, whole, key, runtime, attr = shown
    assert whole[0] == "AttributeError" and any("module.py" in line for line in whole[2])  # %tb: PyTorch's frames
    for _etype, text, stb in (init_none, init_layer, no_return, none_inside, shape, device, unset):
        assert stb == text.splitlines(), "the lines shown are the message, the error's evalue says it too"
        assert 3 <= len(stb) <= 8, stb
        assert all(len(line) <= checks.WIDTH for line in stb), stb
        assert any(line.startswith("  hint: ") for line in stb), stb
        assert not any("site-packages" in line or "torch/nn" in line for line in stb), stb
        assert stb[-1].strip() == "(the whole traceback: %tb in a new cell)"

    # the forgotten super().__init__(), whether PyTorch noticed it on the first call or on the first layer made
    for (etype, _text, stb), name, number in ((init_none, "FFN", 1), (init_layer, "Enc", 2)):
        assert etype == "AttributeError"
        assert _flat(stb).startswith(f"{name}.__init__ never called super().__init__(), so {name} is not a working")
        assert f"  where:    {name}.__init__, in your Exercise {number} cell" in stb
        assert "super().__init__() the first line of __init__" in _flat(stb)
    assert "object has no attribute '_" in _flat(init_none[2])  # '_backward_hooks', '_compiled_call_impl'...
    assert "before Module.__init__() call" in _flat(init_layer[2])

    # a None: forward returned nothing (the test's line is named), or a None inside forward (its name is given)
    assert no_return[0] == "TypeError"
    assert no_return[2][0] == "the test got None from your code where it expected a result"
    assert "line 3 of the test of exercise 3: out, state = blk(torch.ones(2), [None])" in _flat(no_return[2])
    assert "without `return ...` gives None" in _flat(no_return[2])
    assert none_inside[2][0] == "a value is None where a tensor was expected, in Pos.forward"
    joined = _flat(none_inside[2])
    assert "where: line 8 of your Exercise 4 cell: return X + self.P" in joined
    assert "  None:     self.P" in none_inside[2]
    assert "self.P is None: give it its value in __init__" in joined

    # a shape error: the line, the shapes of the tensors it names, the error's first line
    assert shape[0] == "RuntimeError" and shape[2][0] == "a shape mismatch in Att.forward"
    joined = _flat(shape[2])
    assert "  where:    line 4 of your Exercise 5 cell: scores = torch.bmm(queries, keys)" in shape[2]
    assert "  shapes:   queries (6, 3, 4), keys (6, 5, 4)" in shape[2]
    assert "RuntimeError: Expected size for first two dimensions of batch2 tensor" in joined

    # a device mismatch names the devices of the line's tensors
    assert device[2][0] == "a device mismatch in add_row" and "  devices:  X meta, row cpu" in device[2]

    # an attribute of the notebook's class that nothing set
    assert unset[2][0] == "Net has no attribute dense1: nothing set self.dense1"
    assert "set self.dense1 in Net.__init__" in _flat(unset[2])

    # anything else keeps IPython's traceback
    for _etype, _text, stb in (key, runtime, attr):
        assert any("Traceback" in line for line in stb), stb
    assert found["last"] == "AttributeError"  # the last error, for %tb


def test_explain_never_raises_and_leaves_other_errors_alone():
    assert checks.explain(KeyError("x")) is None
    assert checks.explain(RuntimeError("boom")) is None  # no traceback, no notebook frame
    try:
        torch.ones(2, 3) @ torch.ones(2, 3)
    except RuntimeError as err:
        assert checks.explain(err) is None  # raised here, not in a notebook's code (__main__)

    class Weird(RuntimeError):
        def __str__(self):
            raise ValueError("a student's error type whose str fails")

    assert checks.explain(Weird()) is None


def test_check_tensor_says_what_a_none_means():
    with pytest.raises(checks.CheckFailed) as err:
        checks.check_shape(None, (2, 3), "output")
    message = str(err.value)
    assert "got:      None" in message and "without `return ...` gives None" in message


def test_a_false_boolean_check_says_what_and_the_hint_without_expected_true_got_false():
    with pytest.raises(checks.CheckFailed) as failed:
        checks.check_true(False, "5 separate spans in every draw (got [3, 5])", hint="keep a token between them")
    assert str(failed.value).splitlines() == [
        "5 separate spans in every draw (got [3, 5])",
        "  hint: keep a token between them",
    ]
    with pytest.raises(checks.CheckFailed) as failed:  # not a bool: what came back is worth showing
        checks.check_true(torch.tensor(True), "a tensor is not True")
    assert "expected: True" in str(failed.value) and "got:      tensor(True)" in str(failed.value)
