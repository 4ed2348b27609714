"""Fashion-MNIST without torchvision (D2L 4.2).

The four files are in the IDX format: a 4-byte magic number (two zero bytes, a
type code, the number of dimensions), one big-endian uint32 per dimension, then
the values in row-major order. :func:`read_idx` reads one (gzip-compressed or
not) and checks it; :class:`FashionMNIST` serves the 60,000 training and 10,000
test images (D2L uses the test set for validation) as float batches in [0, 1],
optionally resized.

Shape letters: B batch, C channels (1), S image side (28, or the resize).
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from math import prod
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

from qkv._validate import positive_int
from qkv.data._fetch import DataFile, find, read_verified

__all__ = ["FashionMNIST", "ImageSet", "FASHION_MNIST_FILES", "LABELS", "read_idx", "parse_idx"]

# IDX type code -> big-endian numpy dtype.
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}

LABELS = ("t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle boot")

_BASE_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
_SYSTEM_DIR = "/usr/share/datasets/fashion-mnist"
_SHA256 = {
    "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}


def _data_file(stem: str) -> DataFile:
    return DataFile(
        name=f"Fashion-MNIST {stem}.gz",
        relpath=f"fashion-mnist/{stem}.gz",
        checksum=_SHA256[stem],
        url=_BASE_URL + f"{stem}.gz",
        gunzip=True,
        alt_relpaths=(f"fashion-mnist/{stem}", f"{stem}.gz", stem),
        system_dirs=(_SYSTEM_DIR,),
    )


FASHION_MNIST_FILES = {stem: _data_file(stem) for stem in _SHA256}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file, gzip-compressed or not, into a native-endian numpy array (D2L 4.2).

    Raises ``ValueError`` naming the file if it is not IDX (bad magic number or
    type code), or if its data is shorter or longer than its header announces.
    """
    path = Path(path)
    with open(path, "rb") as f:
        is_gzip = f.read(2) == b"\x1f\x8b"
    try:
        with gzip.open(path, "rb") if is_gzip else open(path, "rb") as f:
            data = f.read()
    except (EOFError, OSError, zlib.error) as err:
        raise ValueError(
            f"{path}: the gzip stream is truncated or corrupt ({err}). Delete the file and get a fresh copy."
        ) from err
    return parse_idx(data, path)


def parse_idx(data: bytes, path: str | os.PathLike = "<bytes>") -> np.ndarray:
    """Decode the bytes of an (uncompressed) IDX file; ``path`` only names it in errors (D2L 4.2)."""
    fix = "Delete the file and get a fresh copy (or point data_dir= / QKV_DATA_DIR to a good one)."
    if len(data) < 4 or data[:2] != b"\0\0" or data[2] not in _IDX_DTYPES or data[3] == 0:
        magic = data[:4].hex() or "empty"
        raise ValueError(
            f"{path} is not an IDX file: its magic number is 0x{magic}, but an IDX file starts with two zero "
            f"bytes, a type code ({', '.join(f'0x{c:02x}' for c in _IDX_DTYPES)}) and the number of dimensions. "
            f"{fix}"
        )
    ndim = data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise ValueError(f"{path}: the IDX header of {ndim} dimensions is cut short ({len(data)} bytes). {fix}")
    dims = struct.unpack(f">{ndim}I", data[4:header])
    dtype = np.dtype(_IDX_DTYPES[data[2]])
    expected, found = prod(dims) * dtype.itemsize, len(data) - header
    if found != expected:
        state = "truncated" if found < expected else "longer than its header says"
        raise ValueError(
            f"{path}: the header announces an array of shape {dims} and type {dtype.str} ({expected} bytes of "
            f"data), but the file holds {found} bytes after the header: it is {state}. {fix}"
        )
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(dims)
    return array.astype(dtype.newbyteorder("="))  # a writable, native-endian copy


# Decoded arrays of this process, keyed by (path, mtime, size): building FashionMNIST twice is cheap.
_DECODED: dict[tuple[str, int, int], np.ndarray] = {}


def _load(stem: str, data_dir) -> np.ndarray:
    """The decoded array of one file, verified and decoded once per process while the file is unchanged."""
    file = FASHION_MNIST_FILES[stem]
    path = find(file, data_dir)
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _DECODED:
        path, content = read_verified(file, data_dir)
        _DECODED[key] = parse_idx(content, path)
    return _DECODED[key]


def _split(prefix: str, data_dir, limit: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    images, labels = _load(f"{prefix}-images-idx3-ubyte", data_dir), _load(f"{prefix}-labels-idx1-ubyte", data_dir)
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
        raise ValueError(
            f"Fashion-MNIST {prefix}: expected images (N, 28, 28) and labels (N,), got shapes "
            f"{images.shape} and {labels.shape}"
        )
    if labels.size and (labels.min() < 0 or labels.max() >= len(LABELS)):
        raise ValueError(f"Fashion-MNIST {prefix}: labels must lie in 0..9, found {labels.min()}..{labels.max()}")
    if limit is not None:
        if limit > len(images):
            raise ValueError(f"asked for {limit} examples, but the {prefix} split has only {len(images)}")
        images, labels = images[:limit], labels[:limit]
    return torch.from_numpy(images[:, None]), torch.from_numpy(labels.astype(np.int64))  # (N, 1, 28, 28), (N,)


class ImageSet(torch.utils.data.Dataset):
    """Fashion-MNIST images as floats in [0, 1], resized on the fly (D2L 4.2.1).

    ``dataset[i]`` is ``(X (1, S, S), y)``; ``dataset[indices]`` for a list or
    tensor of indices is a whole batch ``(X (B, 1, S, S), y (B,))``, which is how
    :meth:`FashionMNIST.get_dataloader` fetches batches in one step.
    """

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, resize: tuple[int, int]):
        self.images, self.labels, self.resize = images, labels, tuple(resize)  # (N, 1, 28, 28) uint8, (N,)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index):
        single = isinstance(index, int) or (torch.is_tensor(index) and index.dim() == 0)
        idx = torch.as_tensor([index] if single else index, dtype=torch.long)
        X = self.images[idx].to(torch.float32) / 255  # (B, 1, 28, 28)
        if tuple(X.shape[-2:]) != self.resize:
            # Antialiasing changes nothing when enlarging and, when shrinking, matches torchvision's Resize.
            X = F.interpolate(X, size=self.resize, mode="bilinear", align_corners=False, antialias=True)  # (B, 1, S, S)
        y = self.labels[idx]  # (B,)
        return (X[0], y[0]) if single else (X, y)


def _check_resize(resize) -> tuple[int, int]:
    if isinstance(resize, int):
        resize = (resize, resize)
    try:
        h, w = resize
    except (TypeError, ValueError) as err:
        raise TypeError(f"resize must be (height, width) or an int, got {resize!r}") from err
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (h, w)):
        raise ValueError(f"resize must hold two positive ints, got {resize!r}")
    return h, w


class FashionMNIST:
    """The Fashion-MNIST data set (D2L 4.2).

    ``FashionMNIST(batch_size=64, resize=(28, 28), num_train=None, num_val=None, data_dir=None)``.
    ``train`` (60,000 images) and ``val`` (the 10,000 test images) are
    :class:`ImageSet` s; ``num_train`` / ``num_val`` keep only the first N of
    each. Loaders yield ``X`` float32 (B, 1, S, S) in [0, 1] and ``y`` int64 (B,).
    Files are looked up in ``data_dir``, ``$QKV_DATA_DIR`` (in a ``fashion-mnist/``
    folder or at the top), ``/usr/share/datasets/fashion-mnist``, the cache, then downloaded.
    """

    def __init__(
        self,
        batch_size: int = 64,
        resize=(28, 28),
        num_train: int | None = None,
        num_val: int | None = None,
        data_dir=None,
    ):
        batch_size = positive_int(batch_size, "batch_size")
        for name, value in (("num_train", num_train), ("num_val", num_val)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"{name} must be None (all) or a non-negative int, got {value!r}")
        self.batch_size, self.resize = batch_size, _check_resize(resize)
        self.train = ImageSet(*_split("train", data_dir, num_train), self.resize)
        self.val = ImageSet(*_split("t10k", data_dir, num_val), self.resize)

    def text_labels(self, indices) -> list[str]:
        """Class names of label indices (D2L 4.2.1)."""
        names = []
        for i in indices:
            i = int(i)
            if not 0 <= i < len(LABELS):
                raise ValueError(f"Fashion-MNIST labels are 0..9, got {i}")
            names.append(LABELS[i])
        return names

    def get_dataloader(self, train: bool):
        """Batches of ``train`` (shuffled) or ``val`` (in order), fetched a whole batch at a time (D2L 4.2.2)."""
        data = self.train if train else self.val
        order = torch.utils.data.RandomSampler(data) if train else torch.utils.data.SequentialSampler(data)
        batches = torch.utils.data.BatchSampler(order, self.batch_size, drop_last=False)
        return torch.utils.data.DataLoader(data, batch_size=None, sampler=batches)

    def train_dataloader(self):
        """Shuffled training batches ``(X (B, 1, S, S), y (B,))`` (D2L 4.2.2)."""
        return self.get_dataloader(train=True)

    def val_dataloader(self):
        """Validation (test-set) batches in order (D2L 4.2.2)."""
        return self.get_dataloader(train=False)
