"""Every timing the docs state comes from a benchmark under `benchmarks/`, with the machine and
the date it was measured on; claims no benchmark showed are gone."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
# Words that say a number is a measured speed, not a configured bound or an example's output.
SPEED = re.compile(r"(\d[\d.]*x (?:the|faster|slower|`git)|\d+% (?:faster|slower)|takes about|"
                   r"commits/s|MB/s|flight-steps/s)", re.I)
TIME = re.compile(r"\b\d[\d,.]* ?(?:ms|s|min)\b")
SPEED_HEADING = re.compile(r"^#+\s*(speed|how long it takes|how fast)", re.I)
MEASURED = re.compile(r"Measured (20\d\d-\d\d-\d\d) on [^.]*\d+ cores")
# A page of measurements may say once, at its top, where and when: "Machine: ... N cores ...
# Date: YYYY-MM-DD".
PAGE_MEASURED = re.compile(r"Machine: [^\n]*\d+ cores.*?Date: 20\d\d-\d\d-\d\d", re.S)
# What the docs said before a benchmark was run against them (issue 17): never again.
RETIRED = ["a few milliseconds", "about 450 ms", "4,300 commits/s", "1.6x `git log -p`",
           "tens of MB/s"]


def _sections(page: Path) -> list[tuple[str, str]]:
    """(heading, text) of each section of a page; code blocks left out (examples' output)."""
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    parts = re.split(r"^(#{1,6} .*)$", text, flags=re.M)
    return [(parts[i - 1].strip() if i else page.name, parts[i]) for i in range(0, len(parts), 2)]


def test_every_section_that_states_a_speed_names_its_benchmark_machine_and_date():
    for page in PAGES:
        sections = _sections(page)
        page_wide = bool(PAGE_MEASURED.search(sections[0][1]))
        named = page_wide and re.search(r"benchmarks/bench_\w+\.py", sections[0][1])
        for heading, body in sections:
            timed = SPEED_HEADING.search(heading) and TIME.search(body)
            if not (SPEED.search(body) or timed):
                continue  # a speed section that only points at a page of measurements is fine
            where = f"{page.relative_to(REPO)} / {heading}"
            assert named or re.search(r"benchmarks/bench_\w+\.py", body), \
                f"{where}: no benchmark named"
            assert page_wide or MEASURED.search(body), \
                f"{where}: say 'Measured YYYY-MM-DD on <machine>, N cores'"


def test_every_benchmark_the_docs_name_exists():
    for page in PAGES:
        for name in re.findall(r"benchmarks/(bench_\w+\.py)", page.read_text()):
            assert (REPO / "benchmarks" / name).is_file(), f"{page.name}: {name}"


def test_retired_timing_claims_are_gone():
    for page in PAGES:
        text = " ".join(page.read_text().split())
        for claim in RETIRED:
            assert claim not in text, f"{page.relative_to(REPO)}: {claim!r}"
