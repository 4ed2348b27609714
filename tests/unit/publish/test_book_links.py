"""Links from the book to the course's repository reach what a student can open: files that exist here and that
the public tree carries (``publish.public.ALLOW``), on the branch ``_config.yml`` names."""

from __future__ import annotations

import re

from course import notebooks as nbs
from publish import colab, public


def repository_links() -> list[tuple[str, str]]:
    """``(page, path)`` of every link in ``book/`` into the repository's tree."""
    url, branch, _ = colab.repository()
    link = re.compile(re.escape(f"{url}/blob/") + r"([^/\s)]+)/([^\s)#]+)")
    found = []
    for page in sorted(nbs.BOOK.glob("*.md")):
        for ref, path in link.findall(page.read_text(encoding="utf-8")):
            assert ref == branch, f"{page.name} links to {path} on {ref!r}, not on the book's branch {branch!r}"
            found.append((page.name, path))
    return found


def test_links_into_the_repository_reach_public_files():
    links = repository_links()
    assert ("vision-transformer.md", "benchmarks/results/vit_cpu.md") in links  # what 11.8's question 2 reads
    allowed = [entry for entry in public.ALLOW if not entry.endswith("/")]
    folders = [entry for entry in public.ALLOW if entry.endswith("/")]
    for page, path in links:
        assert (nbs.ROOT / path).is_file(), f"{page} links to {path}, which is not in the repository"
        assert path in allowed or path.startswith(tuple(folders)), (
            f"{page} links to {path}, which the public tree does not carry: add it to publish.public.ALLOW"
        )


def test_no_page_names_a_benchmark_record_without_linking_it():
    """A student reads the records a page cites from the public repository: a bare path names a file they lack."""
    for page in sorted(nbs.BOOK.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        bare = re.findall(r"(?<!\[)`(benchmarks/results/[^`]+)`(?!\]\()", text)
        assert not bare, f"{page.name} names {bare} without a link to the public repository"
