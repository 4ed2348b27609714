"""Tests for qkv.training: the Trainer (D2L 3.2.4) and gradient clipping (D2L 9.5.3)."""

import copy
import math
import random

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from qkv import training  # noqa: E402
from qkv.training import Trainer, busy_cores, clip_gradients, fusable, resolve_device, training_threads  # noqa: E402


class Data:
    """A minimal data module: tensors split into training and validation loaders."""

    def __init__(self, X, Y, X_val=None, Y_val=None, batch_size=16, shuffle=True):
        self.train = TensorDataset(X, Y)
        self.val = TensorDataset(X_val, Y_val) if X_val is not None else None
        self.batch_size, self.shuffle = batch_size, shuffle

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=self.shuffle)

    def val_dataloader(self):
        return None if self.val is None else DataLoader(self.val, batch_size=self.batch_size)


class LinearRegression(nn.Module):
    def __init__(self, in_features=3):
        super().__init__()
        self.net = nn.Linear(in_features, 1)

    def forward(self, X):
        return self.net(X)

    def loss(self, Y_hat, Y):
        return F.mse_loss(Y_hat, Y)


def _regression_data(n=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 3, generator=g)
    Y = X @ torch.tensor([[2.0], [-3.4], [0.5]]) + 4.2 + 0.1 * torch.randn(n, 1, generator=g)  # (n, 3) @ (3, 1)
    return X, Y


def test_resolve_device():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(None) == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            Trainer(1, device="cuda")
    with pytest.raises(ValueError, match="unknown device"):
        resolve_device("gpu-please")


def test_linear_regression_approaches_the_least_squares_solution():
    torch.manual_seed(0)
    X, Y = _regression_data()
    model = LinearRegression()
    history = Trainer(max_epochs=150, lr=0.05, progress=False, device="cpu").fit(model, Data(X, Y, X, Y))
    A = torch.cat([X, torch.ones(len(X), 1)], dim=1).double()  # (n, 3) | (n, 1) -> (n, 4)
    solution = torch.linalg.lstsq(A, Y.double()).solution.squeeze(1)  # (4, 1) -> (4,)
    learned = torch.cat([model.net.weight.detach().reshape(-1), model.net.bias.detach()]).double()  # (1, 3) -> (3,)
    torch.testing.assert_close(learned, solution, atol=2e-3, rtol=0)
    assert history["train_loss"][-1] < 0.1 * history["train_loss"][0], "the loss should fall"
    optimum = float(((A @ solution - Y.double().squeeze(1)) ** 2).mean())  # (n, 4) @ (4,) -> (n,)
    assert history["val_loss"][-1] == pytest.approx(optimum, rel=0.02), "the validation loss reaches the optimum"
    assert history["epoch"] == list(range(1, 151))
    assert all(b >= a for a, b in zip(history["seconds"], history["seconds"][1:])), "elapsed time is cumulative"


def test_sgd_takes_exactly_the_hand_computed_first_step():
    model = LinearRegression(in_features=1)
    with torch.no_grad():
        model.net.weight.fill_(0.5)
        model.net.bias.fill_(0.0)
    X, Y = torch.tensor([[1.0], [2.0]]), torch.tensor([[1.0], [3.0]])
    trainer = Trainer(max_epochs=1, optimizer="sgd", lr=0.1, progress=False)
    history = trainer.fit(model, Data(X, Y, batch_size=2, shuffle=False))
    # residuals (0.5 - 1, 1.0 - 3) = (-0.5, -2); MSE = (0.25 + 4) / 2 = 2.125
    # dL/dw = mean(2 * r * x) = (-1 - 8) / 2 = -4.5; dL/db = mean(2 * r) = -2.5
    assert history["train_loss"] == [pytest.approx(2.125)]
    assert model.net.weight.item() == pytest.approx(0.5 + 0.1 * 4.5)
    assert model.net.bias.item() == pytest.approx(0.0 + 0.1 * 2.5)
    assert math.isnan(history["val_loss"][0]), "no validation data gives NaN"


class LazyClassifier(nn.Module):
    """Lazy layers, dropout and no loss method: needs lazy init, seeding and the cross-entropy fallback."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.Dropout(0.3), nn.LazyLinear(3))

    def forward(self, X):
        return self.net(X)


def _classification_data(n=48):
    g = torch.Generator().manual_seed(1)
    X = torch.randn(n, 5, generator=g)
    return Data(X, (X[:, 0] > 0).long() + (X[:, 1] > 0.5).long(), X[:12], torch.zeros(12, dtype=torch.long), 8)


def test_same_seed_gives_identical_runs_and_another_seed_differs():
    runs = []
    for seed in (7, 7, 8):
        model = LazyClassifier()
        history = Trainer(max_epochs=3, seed=seed, lr=0.01, progress=False).fit(model, _classification_data())
        runs.append((history, [p.detach().clone() for p in model.parameters()]))
    (h1, p1), (h2, p2), (h3, _) = runs
    for key in ("epoch", "train_loss", "val_loss"):
        assert h1[key] == h2[key], f"{key} differs between two runs with the same seed"
    assert all(torch.equal(a, b) for a, b in zip(p1, p2))
    assert h1["train_loss"] != h3["train_loss"], "a different seed should give a different run"


class PythonRandomModel(LinearRegression):
    """Draws from Python's ``random`` at every forward pass (as a data augmentation might) and records the draws."""

    def __init__(self):
        super().__init__()
        self.draws = []

    def forward(self, X):
        self.draws.append(random.random())
        return super().forward(X)


def test_seed_seeds_pythons_random_too():
    """Trainer(seed=s) seeds Python's ``random`` before the first forward pass: the first draw is that of a fresh
    random.Random(s), and two runs agree whatever the global state was before."""
    X, Y = _regression_data(n=8)
    runs = []
    for before in (1, 2):
        random.seed(before)  # a different global state before each run
        model = PythonRandomModel()
        Trainer(max_epochs=2, seed=123, lr=0.01, progress=False).fit(model, Data(X, Y, batch_size=4))
        runs.append(model.draws)
    assert runs[0] == runs[1], "two runs with seed=123 drew different numbers: Python's random was not seeded"
    fresh = random.Random(123)
    assert runs[0] == [fresh.random() for _ in range(4)], "the draws are not those of random.Random(123)"


def test_fit_trains_in_training_mode_even_if_the_model_was_left_in_eval_mode():
    """A model handed over in eval mode (after an evaluation, say) must still train with dropout on."""

    class Recorder(LinearRegression):
        def __init__(self):
            super().__init__()
            self.dropout = nn.Dropout(0.5)
            self.seen = []

        def forward(self, X):
            self.seen.append((self.training, torch.is_grad_enabled()))
            return super().forward(self.dropout(X))

    X, Y = _regression_data(n=12)
    model = Recorder().eval()
    Trainer(max_epochs=2, lr=0.01, progress=False).fit(model, Data(X, Y, X, Y, batch_size=4))
    train_calls = [training for training, grad in model.seen if grad]
    assert len(train_calls) == 6, "three training batches per epoch, two epochs"
    assert all(train_calls), f"training steps ran with model.training = {train_calls}: dropout was off"
    assert [training for training, grad in model.seen if not grad] == [False] * 6, "validation runs in eval mode"


def test_lazy_model_without_loss_uses_cross_entropy_on_its_initial_outputs():
    torch.manual_seed(0)
    data = _classification_data()
    data.batch_size = 48  # one batch, so epoch 1's loss is the loss before the first step
    model = LazyClassifier().eval()
    model(data.train.tensors[0][:1])  # materialise the lazy layers, then copy them
    reference = copy.deepcopy(model).eval()
    model.net[2].p = 0.0  # no dropout, so the training loss is deterministic
    history = Trainer(max_epochs=1, lr=0.01, progress=False).fit(model, data)
    X, Y = data.train.tensors
    expected = F.cross_entropy(reference(X), Y).item()
    assert history["train_loss"][0] == pytest.approx(expected, rel=1e-5)


def test_validation_runs_in_eval_mode_without_gradients_and_weights_batches_by_size():
    class Recorder(LinearRegression):
        def __init__(self):
            super().__init__()
            self.seen = []

        def forward(self, X):
            self.seen.append((self.training, torch.is_grad_enabled(), len(X)))
            return super().forward(X)

    torch.manual_seed(0)
    X, Y = _regression_data(n=20)
    X_val, Y_val = _regression_data(n=11, seed=5)  # batches of 4, 4, 3: a plain mean of batch means is wrong
    model = Recorder()
    history = Trainer(max_epochs=1, lr=0.01, progress=False).fit(model, Data(X, Y, X_val, Y_val, batch_size=4))
    val_calls = model.seen[-3:]
    assert [c[:2] for c in val_calls] == [(False, False)] * 3, "validation must use eval mode and no_grad"
    assert [c[2] for c in val_calls] == [4, 4, 3]
    assert all(c[:2] == (True, True) for c in model.seen[:-3]), "training uses train mode with gradients"
    assert model.training, "the model is left in training mode"
    with torch.no_grad():
        full = F.mse_loss(model(X_val), Y_val).item()
    assert history["val_loss"][0] == pytest.approx(full, rel=1e-6)


def test_clip_gradients_bounds_the_global_norm_and_keeps_the_direction():
    model = nn.Linear(4, 2)
    model.weight.grad = torch.full((2, 4), 3.0)
    model.bias.grad = torch.tensor([4.0, 0.0])
    raw = torch.cat([model.weight.grad.reshape(-1), model.bias.grad]).clone()  # (2, 4) -> (8,)
    norm = clip_gradients(1.5, model)
    assert norm.item() == pytest.approx(raw.norm().item())
    clipped = torch.cat([model.weight.grad.reshape(-1), model.bias.grad])  # (2, 4) -> (8,)
    torch.testing.assert_close(clipped, raw * 1.5 / raw.norm())
    clip_gradients(100.0, model)
    torch.testing.assert_close(torch.cat([model.weight.grad.reshape(-1), model.bias.grad]), clipped)  # (2, 4) -> (8,)


class SteepModel(LinearRegression):
    """Records the global gradient norm the optimiser sees at each step."""

    def __init__(self):
        super().__init__()
        self.norms = []

    def configure_optimizers(self):
        optim = torch.optim.SGD(self.parameters(), lr=1e-3)

        def record(optimizer, args, kwargs):
            grads = [p.grad.reshape(-1) for p in self.parameters()]  # each -> (numel,)
            self.norms.append(torch.cat(grads).norm().item())

        optim.register_step_pre_hook(record)
        return optim


@pytest.mark.parametrize("clip", [0.0, 0.5])
def test_trainer_clipping_bounds_the_gradient_seen_by_the_optimizer(clip):
    torch.manual_seed(0)
    X, Y = _regression_data()
    model = SteepModel()
    Trainer(max_epochs=2, gradient_clip_val=clip, progress=False).fit(model, Data(X, 100 * Y))
    assert len(model.norms) == 2 * 4
    if clip:
        assert max(model.norms) <= clip * (1 + 1e-5), f"clipped norms {model.norms}"
        assert min(model.norms) == pytest.approx(clip, rel=1e-5), "large gradients are scaled to the bound exactly"
    else:
        assert min(model.norms) > 10, "without clipping these gradients are large, so the clipped case is meaningful"


def test_missing_learning_rate_and_bad_settings_raise_clear_errors():
    X, Y = _regression_data(n=8)
    with pytest.raises(ValueError, match=r"no configure_optimizers\(\).*learning rate"):
        Trainer(1, progress=False).fit(LinearRegression(), Data(X, Y))
    with pytest.raises(ValueError, match="unknown optimizer"):
        Trainer(1, optimizer="adagrad-ish", lr=0.1)
    with pytest.raises(ValueError, match="max_epochs"):
        Trainer(0, lr=0.1)
    with pytest.raises(ValueError, match="lr must be > 0"):
        Trainer(1, lr=-1.0)
    with pytest.raises(TypeError, match="train_dataloader"):
        Trainer(1, lr=0.1, progress=False).fit(LinearRegression(), object())

    class BadLoss(LinearRegression):
        def loss(self, Y_hat, Y):
            return (Y_hat - Y) ** 2

    with pytest.raises(ValueError, match="scalar"):
        Trainer(1, lr=0.1, progress=False).fit(BadLoss(), Data(X, Y))

    class Unbatched(Data):
        def train_dataloader(self):
            return [X]

    with pytest.raises(ValueError, match=r"tuple \(\*inputs, Y\)"):
        Trainer(1, lr=0.1, progress=False).fit(LinearRegression(), Unbatched(X, Y))


def test_a_callable_optimizer_and_configure_optimizers_taking_precedence():
    X, Y = _regression_data(n=8)
    made = []

    def factory(params, lr):
        made.append(lr)
        return torch.optim.SGD(params, lr=lr)

    Trainer(1, optimizer=factory, lr=0.03, progress=False).fit(LinearRegression(), Data(X, Y))
    assert made == [0.03]
    model = SteepModel()
    trainer = Trainer(1, lr=0.5, progress=False)
    with pytest.warns(UserWarning, match="lr is ignored"):
        trainer.fit(model, Data(X, Y))
    assert trainer.optim.param_groups[0]["lr"] == 1e-3


def test_a_scheduler_is_built_with_the_total_steps_and_stepped_after_every_batch():
    """``scheduler(optimizer, total_steps)`` is called once, when the optimiser exists, with max_epochs x batches;
    each batch's SGD step then uses the schedule's learning rate for that step (here 0.1 / (1 + k))."""
    X, Y = _regression_data(n=12)
    built, used = [], []

    def scheduler(optim, total_steps):
        built.append(total_steps)
        return torch.optim.lr_scheduler.LambdaLR(optim, lambda k: 1 / (1 + k))

    class Recording(LinearRegression):
        def loss(self, Y_hat, Y):
            used.append(trainer.optim.param_groups[0]["lr"])  # the rate the step after this loss will take
            return super().loss(Y_hat, Y)

    trainer = Trainer(2, optimizer="sgd", lr=0.1, progress=False, scheduler=scheduler)
    history = trainer.fit(Recording(), Data(X, Y, batch_size=4, shuffle=False))
    assert built == [2 * 3]
    assert used == pytest.approx([0.1 / (1 + k) for k in range(6)])
    assert trainer.optim.param_groups[0]["lr"] == pytest.approx(0.1 / 7)
    assert len(history["train_seconds"]) == len(history["cpu_seconds"]) == 2
    assert 0 < history["train_seconds"][0] <= history["train_seconds"][1] <= history["seconds"][1]
    with pytest.raises(TypeError, match="scheduler must be None or a function"):
        Trainer(1, lr=0.1, scheduler="cosine")
    assert Trainer(1, lr=0.1).lr_scheduler is None


def test_progress_bar_shows_losses_and_plot_draws_both_curves(capsys):
    X, Y = _regression_data(n=16)
    trainer = Trainer(max_epochs=3, lr=0.01, progress=True)
    with pytest.raises(RuntimeError, match="fit"):
        trainer.plot()
    history = trainer.fit(LinearRegression(), Data(X, Y, X, Y))
    err = capsys.readouterr().err
    assert "train_loss" in err and "val_loss" in err
    ax = trainer.plot()
    train_line, val_line = ax.get_lines()
    assert list(train_line.get_xdata()) == [1, 2, 3]
    assert list(train_line.get_ydata()) == history["train_loss"]
    assert list(val_line.get_ydata()) == history["val_loss"]
    plt.close("all")


def test_fusable_only_for_float32_and_float64_parameters():
    assert fusable(nn.Linear(3, 2)) and fusable(nn.Linear(3, 2).double())
    assert not fusable(nn.Linear(3, 2).to(torch.bfloat16)) and not fusable(nn.Linear(3, 2).half())
    assert not fusable(nn.ReLU()), "a model without parameters has nothing to fuse"
    mixed = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 2).to(torch.bfloat16))
    assert not fusable(mixed), "one parameter the fused kernel cannot take is enough"


# ---------------------------------------------------------------- threads and progress on a shared machine


@pytest.fixture
def four_threads(monkeypatch):
    """A machine of 4 cores whose torch runs 4 threads (restored after)."""
    before = torch.get_num_threads()
    monkeypatch.setattr(training.os, "cpu_count", lambda: 4)
    torch.set_num_threads(4)
    yield
    torch.set_num_threads(before)


def test_training_leaves_out_the_cores_that_other_work_keeps_busy(four_threads):
    assert [training_threads(busy) for busy in (0.0, 0.4, 1.0, 2.6, 3.9, 7.0)] == [4, 4, 3, 1, 1, 1]
    torch.set_num_threads(2)  # OMP_NUM_THREADS=2: never more than torch was told
    assert [training_threads(busy) for busy in (0.0, 2.0, 3.0)] == [2, 2, 1]


def test_busy_cores_reads_the_whole_machine_between_nothing_and_every_core():
    busy = busy_cores(window=0.05)
    if busy is None:
        pytest.skip("no /proc/stat here")
    assert 0.0 <= busy <= (training.os.cpu_count() or 1)


def test_fit_trains_on_the_chosen_threads_and_gives_torchs_setting_back(four_threads, monkeypatch):
    seen = []
    monkeypatch.setattr(training, "busy_cores", lambda: 2.6)  # a busy machine: one thread
    data = Data(*_regression_data(n=32), batch_size=8)

    class Spy(LinearRegression):
        def forward(self, X):
            seen.append(torch.get_num_threads())
            return super().forward(X)

    Trainer(1, lr=0.1, progress=False).fit(Spy(), data)
    assert set(seen) == {1} and torch.get_num_threads() == 4
    seen.clear()
    Trainer(1, lr=0.1, progress=False, threads=3).fit(Spy(), data)
    assert set(seen) == {3} and torch.get_num_threads() == 4
    with pytest.raises(ValueError, match='threads must be "auto" or a positive integer'):
        Trainer(1, lr=0.1, threads=0)


def test_the_progress_bar_counts_every_step_and_shows_the_epoch_and_losses(capsys):
    data = Data(*_regression_data(n=40), *_regression_data(n=8, seed=1), batch_size=8)  # 5 steps an epoch
    trainer = Trainer(3, lr=0.1, progress=True, threads=1)
    trainer.fit(LinearRegression(), data)
    err = capsys.readouterr().err
    assert "15/15" in err and "epoch=3/3" in err and "train_loss=" in err and "val_loss=" in err
    assert "training (1 thread)" in err and trainer._bar is None
    Trainer(1, lr=0.1, progress=False, threads=1).fit(LinearRegression(), data)
    assert capsys.readouterr().err == ""
