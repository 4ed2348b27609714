"""qkv._validate: the one check of a whole-number argument, with messages that name the argument."""

from __future__ import annotations

import numpy as np
import pytest

from qkv._validate import int_in, positive_int


def test_ints_and_integer_like_values_pass_as_python_ints():
    assert positive_int(3, "n") == 3
    got = positive_int(np.int64(4), "n")
    assert got == 4 and type(got) is int
    assert int_in(0, "position", 0) == 0 and int_in(7, "pair", 0, 7) == 7


@pytest.mark.parametrize("bad, kind", [(True, "a bool"), (2.0, "float 2.0"), ("3", "str '3'"), (None, "NoneType")])
def test_a_value_that_is_no_integer_is_a_type_error_naming_it(bad, kind):
    with pytest.raises(TypeError, match=f"num_layers must be an integer, got {kind}"):
        positive_int(bad, "num_layers")


def test_a_value_out_of_range_is_a_value_error_with_the_bounds():
    with pytest.raises(ValueError, match="num_layers must be at least 1, got 0"):
        positive_int(0, "num_layers")
    with pytest.raises(ValueError, match="num_val must be at least 0, got -1"):
        int_in(-1, "num_val", 0)
    with pytest.raises(ValueError, match="pair must be between 0 and 7, got 8"):
        int_in(8, "pair", 0, 7)
