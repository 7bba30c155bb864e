"""docs/architecture.md names the house as it stands, and no document points outside the repository
for it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"


def _table_names() -> set[str]:
    """The packages and modules named in the first column of the doc's package table."""
    names = set()
    for line in DOC.read_text().splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([\w./]+)`", line.split("|")[1]))
    return names


def test_every_package_and_top_level_module_is_in_the_architecture_table() -> None:
    package = ROOT / "plimsoll_ci"
    packages = {f"{p.parent.name}/" for p in package.glob("*/__init__.py")}
    modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    assert {"match/", "shipscan/", "tripwire/"} <= packages | modules
    named = _table_names()
    assert (packages | modules | {"plimsoll_sim/"}) - named == set(), "name them in docs/architecture.md"
    # and nothing the table names is gone
    assert {n for n in named if not (package / n).exists() and n != "plimsoll_sim/"} == set()


def _layer_names() -> list[str]:
    """The packages and modules the doc's layer table places (rows `| N. name | ... |`)."""
    names = []
    for line in DOC.read_text().splitlines():
        row = re.match(r"\| (\d+)\. [^|]+\| ([^|]+)\|", line)
        if row:
            names += re.findall(r"`([\w]+/|[\w]+\.py)`", row.group(2))
    return names


def test_every_package_and_top_level_module_is_in_one_layer() -> None:
    # tests/house/test_house_rules.py checks imports against this table: it must place each
    # package once, and name nothing that is gone
    package = ROOT / "plimsoll_ci"
    placed = _layer_names()
    assert sorted(n for n in set(placed) if placed.count(n) > 1) == []
    have = ({f"{p.parent.name}/" for p in package.glob("*/__init__.py")}
            | {p.name for p in package.glob("*.py")} | {"plimsoll_sim/"})
    assert sorted(have - set(placed)) == [], "place them in the layer table of architecture.md"
    assert sorted(set(placed) - have) == []


def test_no_document_points_to_a_design_document_outside_the_repository() -> None:
    texts = [p for p in ROOT.glob("docs/*.md")] + [ROOT / "README.md"]
    outside = [p.name for p in texts if re.search(r"DESIGN\.md|\.\./shared/", p.read_text())]
    assert outside == []
