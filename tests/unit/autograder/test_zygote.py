"""The in-process harness's section process (``tests/support/zygote.py``): what it adds to running the cells.

The harness's solved run is the test session's one execution of each solved notebook
(``tests/notebooks/test_grading_answers.py``), in Jupyter's setting, where the explorers are ipywidgets panels. Outside
a kernel a widget's messages go nowhere, so the process packs them as a kernel would before sending them; these tests
show that this fails where a kernel fails.
"""

from __future__ import annotations

import comm
import ipywidgets
import pytest
from traitlets import Any

from tests.support import zygote


class Holder(ipywidgets.DOMWidget):
    """A widget whose synced state may be anything, as an explorer's could be by mistake."""

    thing = Any().tag(sync=True)


@pytest.fixture
def kernel_packed(monkeypatch):
    """``comm.create_comm`` as the section process sets it, put back afterwards."""
    monkeypatch.setattr(comm, "create_comm", comm.create_comm)
    zygote.pack_widget_messages_as_a_kernel()


def test_outside_a_kernel_a_state_that_json_cannot_hold_goes_unnoticed():
    """Why the section process needs the packing: ipywidgets' default comm builds this widget without a word."""
    assert Holder(thing=object()).comm is not None


def test_a_widget_whose_state_a_kernel_cannot_send_fails_as_in_a_kernel(kernel_packed):
    with pytest.raises(ValueError, match="JSON"):
        Holder(thing=object())


def test_what_a_kernel_can_send_builds_and_updates(kernel_packed):
    slider = ipywidgets.IntSlider(value=3, description="heads")
    panel = ipywidgets.VBox([slider, Holder(thing={"weights": [0.25, 0.75], "label": "query 1"})])
    slider.value = 5  # an update is a message too
    assert type(slider.comm).__name__ == "KernelPackedComm" and panel.children[0].value == 5
