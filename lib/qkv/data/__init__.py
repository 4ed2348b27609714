"""The course's data sets, read from real files (D2L 4.2, 9.2, 9.3, 10.5).

- :class:`MTFraEng`: English-French sentence pairs for translation (D2L 10.5).
- :class:`TimeMachine`: *The Time Machine* for language models (D2L 9.2, 9.3).
- :class:`FashionMNIST`: clothing images for the Vision Transformer (D2L 4.2).
- :class:`Vocab`: token <-> index maps (D2L 9.2.3); :func:`read_idx`: IDX files.

Every file is found by :func:`locate`: the ``data_dir`` argument first, then
``$QKV_DATA_DIR``, system folders, the cache (``$QKV_CACHE_DIR``, default
``~/.cache/qkv``), and last a download from the public source; each is checked
against its published checksum.
"""

from qkv.data._fetch import ChecksumError, DataFile, cache_dir, locate
from qkv.data.fashion_mnist import FashionMNIST, read_idx
from qkv.data.mt import MTFraEng
from qkv.data.timemachine import TimeMachine, load_corpus
from qkv.data.vocab import Vocab

__all__ = [
    "MTFraEng",
    "TimeMachine",
    "FashionMNIST",
    "Vocab",
    "read_idx",
    "locate",
    "load_corpus",
    "DataFile",
    "ChecksumError",
    "cache_dir",
]
