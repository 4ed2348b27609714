"""The pinned npm packages (publish/vendor.py): axe-core, which the book tier injects into each page, comes from its
pinned tarball only, and a tarball whose SHA-256 is not the pinned one is refused and deleted."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from publish import vendor


def test_axe_core_is_unpacked_from_the_pinned_tarball_alone(tmp_path, monkeypatch):
    real = vendor.axe_core_js()  # fetched once into the vendor cache (npm), then read from there
    tgz = real.parent.parent / f"axe-core-{vendor.AXE_CORE_VERSION}.tgz"
    shutil.copyfile(tgz, tmp_path / tgz.name)
    monkeypatch.setattr(vendor, "VENDOR", tmp_path)
    monkeypatch.setattr(shutil, "which", lambda name: pytest.fail(f"looked for {name}: the tarball was there"))
    js = vendor.axe_core_js()
    assert js == tmp_path / f"axe-core-{vendor.AXE_CORE_VERSION}" / "axe.min.js"
    assert sorted(p.name for p in js.parent.iterdir()) == ["LICENSE", "LICENSE-3RD-PARTY.txt", "axe.min.js"]
    assert js.read_bytes() == real.read_bytes() and f"axe v{vendor.AXE_CORE_VERSION}" in js.read_text()[:300]


def test_a_tarball_with_another_checksum_is_refused_and_deleted(tmp_path, monkeypatch):
    monkeypatch.setattr(vendor, "VENDOR", tmp_path)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/npm")

    def fake_npm(args, **kwargs):  # "npm pack" that hands back a tampered tarball
        dest = args[args.index("--pack-destination") + 1]
        (tmp_path / dest / f"axe-core-{vendor.AXE_CORE_VERSION}.tgz").write_bytes(b"not the pinned tarball")
        return subprocess.CompletedProcess(args, 0)

    monkeypatch.setattr(subprocess, "run", fake_npm)
    with pytest.raises(SystemExit, match="is not the pinned"):
        vendor.axe_core_js()
    assert not (tmp_path / f"axe-core-{vendor.AXE_CORE_VERSION}.tgz").exists()
    assert not (tmp_path / f"axe-core-{vendor.AXE_CORE_VERSION}").exists()


def test_without_npm_the_error_says_what_to_install_or_where_to_put_the_tarball(tmp_path, monkeypatch):
    monkeypatch.setattr(vendor, "VENDOR", tmp_path)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(SystemExit, match=r"npm was not found.*apt-get install npm.*axe-core-4\.14\.1\.tgz"):
        vendor.axe_core_js()
