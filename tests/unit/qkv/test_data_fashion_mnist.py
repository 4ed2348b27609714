"""Tests of qkv.data.fashion_mnist (D2L 4.2): the IDX reader and the Fashion-MNIST loaders."""

from __future__ import annotations

import gzip
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from qkv.data import ChecksumError, FashionMNIST, read_idx
from qkv.data._fetch import find
from qkv.data.fashion_mnist import FASHION_MNIST_FILES, LABELS

SYSTEM = Path("/usr/share/datasets/fashion-mnist")
needs_system_data = pytest.mark.skipif(
    not SYSTEM.is_dir(), reason=f"{SYSTEM} is missing: install Debian's dataset-fashion-mnist package"
)


def idx_bytes(array: np.ndarray, code: int) -> bytes:
    """An IDX file written by hand: 0, 0, type code, ndim, big-endian dims, big-endian data."""
    big = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}[code]
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    return header + array.astype(big).tobytes()


def raw_idx(path: Path, offset: int) -> np.ndarray:
    """The uint8 payload of a gzip IDX file, skipping a header of ``offset`` bytes (16 for images, 8 for labels)."""
    return np.frombuffer(gzip.decompress(path.read_bytes())[offset:], dtype=np.uint8)


# --- read_idx ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "code, array",
    [
        (0x08, np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)),
        (0x09, np.array([-128, -1, 0, 127], dtype=np.int8)),
        (0x0B, np.array([[-300, 2], [3, 30000]], dtype=np.int16)),
        (0x0C, np.array([1, -2, 70000], dtype=np.int32)),
        (0x0D, np.array([[0.5, -1.25, 3e5]], dtype=np.float32)),
        (0x0E, np.array([np.pi, -np.e], dtype=np.float64)),
    ],
)
@pytest.mark.parametrize("compress", [False, True], ids=["raw", "gz"])
def test_read_idx_round_trip(tmp_path, code, array, compress):
    data = idx_bytes(array, code)
    path = tmp_path / "x.idx"
    path.write_bytes(gzip.compress(data) if compress else data)
    got = read_idx(path)
    assert got.dtype == array.dtype and got.shape == array.shape and got.dtype.isnative
    np.testing.assert_array_equal(got, array)
    got[...] = 0  # writable


def test_truncated_idx_file_is_reported(tmp_path):
    path = tmp_path / "train-images-idx3-ubyte"
    path.write_bytes(idx_bytes(np.zeros((3, 4, 4), np.uint8), 0x08)[:-5])
    with pytest.raises(ValueError) as err:
        read_idx(path)
    msg = str(err.value)
    assert str(path) in msg and "truncated" in msg and "(3, 4, 4)" in msg and "fresh copy" in msg


def test_idx_file_with_trailing_bytes_is_reported(tmp_path):
    path = tmp_path / "labels"
    path.write_bytes(idx_bytes(np.zeros(4, np.uint8), 0x08) + b"\0")
    with pytest.raises(ValueError, match="longer than its header"):
        read_idx(path)


@pytest.mark.parametrize("head", [b"\x00\x01\x08\x01", b"\x00\x00\x07\x01", b"\x00\x00\x08\x00", b"PK\x03\x04", b""])
def test_bad_magic_number_is_reported(tmp_path, head):
    path = tmp_path / "not-idx.gz"
    path.write_bytes(gzip.compress(head + b"\x00\x00\x00\x01\x05"))
    with pytest.raises(ValueError) as err:
        read_idx(path)
    assert str(path) in str(err.value) and "not an IDX file" in str(err.value) and "fresh copy" in str(err.value)


def test_truncated_gzip_is_reported(tmp_path):
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(idx_bytes(np.arange(200, dtype=np.uint8), 0x08))[:-12])
    with pytest.raises(ValueError, match="truncated or corrupt") as err:
        read_idx(path)
    assert str(path) in str(err.value)


def test_missing_idx_file(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_idx(tmp_path / "nope")


# --- the real data -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def full():
    return FashionMNIST(batch_size=256)


@needs_system_data
def test_sizes_labels_and_balance(full):
    assert len(full.train) == 60000 and len(full.val) == 10000
    labels = raw_idx(SYSTEM / "train-labels-idx1-ubyte.gz", 8)
    assert torch.equal(full.train.labels, torch.from_numpy(labels.astype(np.int64)))
    assert torch.bincount(full.train.labels).tolist() == [6000] * 10  # 10 balanced classes
    assert torch.bincount(full.val.labels).tolist() == [1000] * 10


@needs_system_data
def test_validation_batches_are_the_test_images_scaled(full):
    pixels = raw_idx(SYSTEM / "t10k-images-idx3-ubyte.gz", 16).reshape(10000, 28, 28)
    labels = raw_idx(SYSTEM / "t10k-labels-idx1-ubyte.gz", 8)
    X, y = next(iter(full.val_dataloader()))
    assert X.shape == (256, 1, 28, 28) and X.dtype == torch.float32 and y.dtype == torch.int64
    assert 0 <= X.min() and X.max() <= 1
    np.testing.assert_allclose(X[:, 0].numpy() * 255, pixels[:256], atol=1e-4)
    np.testing.assert_array_equal(y.numpy(), labels[:256])
    assert len(full.val_dataloader()) == 40  # ceil(10000 / 256)


@needs_system_data
def test_training_batches_are_shuffled_subsets(full):
    small = FashionMNIST(batch_size=32, num_train=100, num_val=10)
    assert len(small.train) == 100 and len(small.val) == 10
    torch.manual_seed(0)
    ys = torch.cat([y for _, y in small.train_dataloader()])
    assert sorted(ys.tolist()) == sorted(full.train.labels[:100].tolist())
    assert not torch.equal(ys, full.train.labels[:100])
    assert [len(y) for _, y in small.train_dataloader()] == [32, 32, 32, 4]


def bilinear_reference(image: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Half-pixel-centred bilinear resampling (align_corners=False), one axis at a time with np.interp."""

    def along(values: np.ndarray, n_out: int) -> np.ndarray:
        n_in = values.shape[-1]
        coords = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0, n_in - 1)
        return np.stack([np.interp(coords, np.arange(n_in), row) for row in values])

    rows = along(image, out_w)  # (28, out_w)
    return along(rows.T, out_h).T  # (out_h, out_w)


def antialiased_reference(image: np.ndarray, n_out: int) -> np.ndarray:
    """Shrinking with a triangle filter stretched by the scale (as PIL and torchvision do), renormalised at edges."""
    n_in = image.shape[0]
    scale = n_in / n_out
    weights = np.zeros((n_out, n_in))
    for i in range(n_out):
        centre = (i + 0.5) * scale
        for j in range(n_in):
            weights[i, j] = max(0.0, 1 - abs(j + 0.5 - centre) / scale)
    weights /= weights.sum(axis=1, keepdims=True)
    return weights @ image @ weights.T


@needs_system_data
def test_resize_is_bilinear(full):
    resized = FashionMNIST(batch_size=4, resize=(56, 42), num_train=4, num_val=4)
    X, _ = next(iter(resized.val_dataloader()))
    assert X.shape == (4, 1, 56, 42)
    original = full.val[0][0][0].numpy().astype(np.float64)
    np.testing.assert_allclose(X[0, 0].numpy(), bilinear_reference(original, 56, 42), atol=1e-5)
    assert resized.val[0][0].shape == (1, 56, 42)
    shrunk = FashionMNIST(batch_size=2, resize=14, num_train=2, num_val=2)
    X, _ = next(iter(shrunk.val_dataloader()))
    assert X.shape == (2, 1, 14, 14) and 0 <= X.min() and X.max() <= 1
    np.testing.assert_allclose(X[0, 0].numpy(), antialiased_reference(original, 14), atol=1e-5)


@needs_system_data
def test_decoded_arrays_are_cached_per_process(full):
    again = FashionMNIST(batch_size=8)
    assert again.train.images.data_ptr() == full.train.images.data_ptr()


@needs_system_data
def test_data_dir_is_searched_before_the_system_folder(tmp_path):
    labels = FASHION_MNIST_FILES["train-labels-idx1-ubyte"]
    mine = tmp_path / "fashion-mnist"
    mine.mkdir()
    (mine / "train-labels-idx1-ubyte.gz").write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(ChecksumError) as err:
        FashionMNIST(data_dir=tmp_path)
    assert "train-labels-idx1-ubyte" in str(err.value) and str(tmp_path) in str(err.value)
    # A good, decompressed copy at the top of the data folder is accepted: the checksum is of the content.
    (mine / "train-labels-idx1-ubyte.gz").unlink()
    decompressed = gzip.decompress((SYSTEM / "train-labels-idx1-ubyte.gz").read_bytes())
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(decompressed)
    assert find(labels, data_dir=tmp_path) == tmp_path / "train-labels-idx1-ubyte"
    shutil.copy(SYSTEM / "t10k-labels-idx1-ubyte.gz", mine)
    assert find(FASHION_MNIST_FILES["t10k-labels-idx1-ubyte"], data_dir=tmp_path).parent == mine
    data = FashionMNIST(data_dir=tmp_path, num_train=5, num_val=5)
    assert data.train.labels.tolist() == raw_idx(SYSTEM / "train-labels-idx1-ubyte.gz", 8)[:5].tolist()


def test_text_labels():
    data = FashionMNIST.__new__(FashionMNIST)  # text_labels needs no data
    assert data.text_labels([0, 9, 5]) == ["t-shirt", "ankle boot", "sandal"]
    assert data.text_labels(torch.tensor([3])) == [LABELS[3]] == ["dress"]
    with pytest.raises(ValueError, match="0..9"):
        data.text_labels([10])


@pytest.mark.parametrize(
    "kwargs, match",
    [({"batch_size": 0}, "batch_size"), ({"resize": (0, 5)}, "resize"), ({"num_train": -1}, "num_train")],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        FashionMNIST(**kwargs)
