"""Mistake: the answer only calls the course's reference implementation in qkv (passes the visible test)."""

from qkv import nadaraya_watson as nw


def nadaraya_watson(x_train, y_train, x_val, kernel, sigma=1.0):
    return nw.nadaraya_watson(x_train, y_train, x_val, kernel, sigma)
