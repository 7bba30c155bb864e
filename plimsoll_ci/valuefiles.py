"""Values files: one value a line, or a structured file (YAML, JSON, TOML, CSV) and a `--select`.

A structured file is never read as lines (its `heldout:` line would become a withheld word, its
`- 48213377123` a text that no other spelling of the seed matches). It is recognised by its
extension (.yaml .yml .json .toml .csv), and, whatever its name, by its content when it parses as
a JSON array or object, a YAML sequence, or a YAML mapping holding a list or a mapping. Without a
`--select` it is refused, naming the paths it could take (`heldout.seeds[*] (16 numbers)`).

The select syntax, kept small::

    heldout.seeds[*]     key `heldout`, then key `seeds`, then every item of that list
    seeds[0]             one item (counted from 0); on a mapping, its Nth value in file order
    labels[*]            every value of a mapping
    seed / [*].seed      CSV: the column named `seed` of every row (a header row names columns)
    [*][0]               CSV without a header row: the first column

A key is written as it is (`Seed ID`), except one holding `.`, `[` or `]`, which is reached by
its position (`[N]`). A selected number is a number entry; a string is read as a line of a plain
file is (text, or a number when it is one: JSON and CSV keep 64-bit seeds in strings); a boolean,
a null or a list or mapping is refused. YAML is read with `yamlsafe`'s loader, PyYAML's safe one
(YAML 1.1: `0777` is octal; quote a value to keep it as written), within this module's bounds.

Bounds: a values file is read up to `VALUES_BOUND` bytes (`files.read_bounded`); a structured
document is walked through at most `MAX_NODES` nodes (an alias counts each time it is met, so a
"billion laughs" file is refused, not expanded) and `MAX_DEPTH` levels; a YAML one is held to the
same two bounds while it is composed (`yamlsafe`), before anything is built. Messages name the file,
the path and the line, never a value (keys are shown only when they are plain names).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from plimsoll_ci import yamlsafe
from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import MiB, read_bounded

VALUES_BOUND = 64 * MiB  # a million 20-digit seeds with their ids fit many times over
MAX_NODES = 2_000_000
MAX_DEPTH = 64
EXTENSIONS = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml", ".csv": "csv"}
_HINTS = 8  # candidate paths named in a refusal
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_ \-]{0,63}")
_DIGITS = re.compile(r"[0-9]{5}")
_STEP = re.compile(r"\.?([^.\[\]]+)|\[(\*|[0-9]+)\]")
# A first meaningful line that could open a structured document: `-`, `[`, `{` or `key:`.
_OPENS = re.compile(rb"\s*(?:[-\[{]|[^\s#:][^:\n]*:(?:[ \t]|\r?$))")


class Value(NamedTuple):
    """One selected value: where it sits (`heldout.seeds[3]`, or a CSV row's line number), its
    text as a values-file line would hold it, and its line (0 when the format gives none)."""

    where: str
    text: str
    line: int


_Map = yamlsafe.LinedMap  # a mapping with the line of each key's value (0 when none is given)
_Seq = yamlsafe.LinedSeq  # a list with the line of each item


def _is_name(key: Any) -> bool:
    """Whether a key may be shown in a path: a plain name (no number in it that could be a
    seed); any other key is shown, and selected, by its position."""
    return isinstance(key, str) and bool(_NAME.fullmatch(key)) and not _DIGITS.search(key)


def _line(node: Any, key: Any) -> int:
    lines = getattr(node, "lines", None)
    if isinstance(lines, dict):
        return lines.get(key, 0)
    if isinstance(lines, list) and isinstance(key, int) and key < len(lines):
        return lines[key]
    return 0


# --------------------------------------------------------------------------- reading


def read(path: str, what: str = "values file") -> bytes:
    """A values file's bytes, at most `VALUES_BOUND` (BadInput naming the file otherwise)."""
    return read_bounded(path, VALUES_BOUND, f"{what} {path}")


def structure(name: str, data: bytes) -> str | None:
    """`yaml`, `json`, `toml` or `csv` when the file is structured (by its extension, or by its
    content: a JSON array or object, a YAML sequence or a mapping holding a list or a mapping);
    None for a plain file of one value a line."""
    fmt = EXTENSIONS.get(Path(name).suffix.lower())
    if fmt is not None:
        return fmt
    head = _first_line(data)
    if head is None or not _OPENS.match(head):
        return None
    try:
        tree = parse(data, "json", name)
    except BadInput:
        try:
            tree = parse(data, "yaml", name)
        except BadInput:
            return None
        if isinstance(tree, list) or (isinstance(tree, dict) and any(
                isinstance(v, dict | list) for v in tree.values())):
            return "yaml"
        return None
    return "json" if isinstance(tree, dict | list) else None


def _first_line(data: bytes) -> bytes | None:
    for line in data[:65536].splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith(b"#"):
            return line
    return None


def parse(data: bytes, fmt: str, origin: str) -> Any:
    """The document of a structured file (dicts, lists, scalars; YAML and CSV ones know their
    lines); BadInput naming the file and the line when it does not parse."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise BadInput(f"values file {origin}: not UTF-8 at byte {e.start}") from None
    try:
        if fmt == "yaml":
            return _yaml(text, origin)
        if fmt == "json":
            import json

            def unique(pairs: list[tuple[str, Any]]) -> dict:
                out = dict(pairs)
                if len(out) != len(pairs):
                    raise BadInput(_twice(origin, ""))
                return out

            try:
                return json.loads(text, object_pairs_hook=unique)
            except json.JSONDecodeError as e:
                raise BadInput(f"values file {origin}: not valid JSON at line {e.lineno} column "
                               f"{e.colno}; fix it, or give a plain file of one value a line"
                               ) from None
        if fmt == "toml":
            import tomllib

            try:
                return tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                # tomllib's message names the line and column, never the text there.
                raise BadInput(f"values file {origin}: not valid TOML ({e})") from None
        return _csv(text, origin)
    except RecursionError:
        raise BadInput(f"values file {origin}: nested too deeply to read; a values file is a "
                       "list, or a mapping of lists") from None
    except ValueError as e:  # an integer past Python's digit limit, and the like
        raise BadInput(f"values file {origin}: cannot be read as {fmt.upper()} "
                       f"({type(e).__name__})") from None


def _twice(origin: str, where: str) -> str:
    # The key is not named: in a file of seeds, a key may be one.
    return (f"values file {origin}{where}: a key given twice in one mapping (the first one's "
            "values would be lost); keep one")


def _yaml(text: str, origin: str) -> Any:
    def check_key(key: Any, line: int, twice: bool) -> BadInput | None:
        if isinstance(key, list | dict):
            return BadInput(f"values file {origin} line {line}: a key must be a name or a number")
        return BadInput(_twice(origin, f" line {line}")) if twice else None

    # the one YAML loader (nesting and aliases bounded while composing, one error shape)
    return yamlsafe.load_lined(text, f"values file {origin}", check_key,
                               yamlsafe.Bounds(MAX_DEPTH, MAX_NODES))


def _csv(text: str, origin: str) -> _Seq:
    """Every row as a list of cells (with its line); a header row is whatever `select` takes it
    for (`with_header`)."""
    import csv
    import io

    reader = csv.reader(io.StringIO(text, newline=""))
    rows = _Seq()
    start = 1
    try:
        for row in reader:
            if row:
                item = _Seq(row)
                item.lines = [start] * len(row)
                rows.append(item)
                rows.lines.append(start)
            start = reader.line_num + 1
    except csv.Error as e:
        raise BadInput(f"values file {origin} line {reader.line_num}: not valid CSV ({e})"
                       ) from None
    return rows


def with_header(rows: list, origin: str) -> _Seq:
    """CSV rows after the first as mappings by the first row's names (a select that names a
    column says the file has a header row)."""
    if not rows:
        raise BadInput(f"values file {origin}: empty, no header row to name a column")
    header = rows[0]
    out = _Seq()
    for row in rows[1:]:
        item = _Map(zip(header, row, strict=False))
        item.lines = dict.fromkeys(header, getattr(row, "lines", [0])[0])
        out.append(item)
        out.lines.append(item.lines[header[0]] if header else 0)
    return out


def _looks_like_header(rows: list) -> bool:
    from plimsoll_ci.match.canonical import classify

    return len(rows) >= 2 and all(c.strip() and classify(c)[0] == "text" for c in rows[0])


# --------------------------------------------------------------------------- selecting


def _steps(expr: str, origin: str, csv: bool) -> list[str | int | None]:
    """`heldout.seeds[*]` -> ["heldout", "seeds", None]: a key, a position, or None for all."""
    text = expr.strip()
    if csv and text and not text.startswith("["):
        text = "[*]." + text  # a CSV column: every row's
    steps: list[str | int | None] = []
    pos = 0
    while pos < len(text):
        m = _STEP.match(text, pos)
        # a key comes first or after a dot: `a[0]b` is a typo, not `a[0].b`
        if m is None or (m.group(1) is not None and (pos == 0) == text.startswith(".", pos)):
            raise BadInput(f"--select {expr!r} for {origin}: cannot read it at character "
                           f"{pos + 1}; write keys with dots and [*] or [N] for items, like "
                           "heldout.seeds[*] (see docs/withheld-sets.md)")
        key, index = m.groups()
        steps.append(key if key is not None else None if index == "*" else int(index))
        pos = m.end()
    if not steps:
        raise BadInput(f"--select for {origin} is empty; name a path like heldout.seeds[*]")
    return steps


def _children(node: Any) -> Iterator[tuple[str, Any, int]]:
    """(how the child is named in a path, the child, its line) for a list's or mapping's items."""
    if isinstance(node, list):
        for i, child in enumerate(node):
            yield f"[{i}]", child, _line(node, i)
    else:
        for i, (k, child) in enumerate(node.items()):
            name = f".{k}" if _is_name(k) else f"[{i}]"
            yield name, child, _line(node, k)


def _join(path: str, name: str) -> str:
    return name[1:] if not path and name.startswith(".") else path + name


def select(tree: Any, expr: str, origin: str, fmt: str = "yaml") -> list[Value]:
    """The values `expr` selects in `tree`, in document order; BadInput (exit 2) naming the file,
    the path and the line when it selects nothing, a list or a mapping, or a value that is
    neither a number nor text."""
    steps = _steps(expr, origin, fmt == "csv")
    raw = tree
    if fmt == "csv" and any(isinstance(s, str) for s in steps):
        tree = with_header(tree, origin)
    level: list[tuple[str, Any, int]] = [("", tree, 0)]
    for step in steps:
        nxt = []
        for path, node, _line_no in level:
            if not isinstance(node, dict | list):
                raise BadInput(f"--select {expr!r} for {origin}: {path or 'the top'} is a single "
                               "value, not a list or a mapping; end the path there"
                               + _hint(raw, fmt))
            if step is None:
                nxt += [(_join(path, n), c, ln) for n, c, ln in _children(node)]
            elif isinstance(step, int):
                items = list(_children(node))
                if step >= len(items):
                    raise BadInput(f"--select {expr!r} for {origin}: {path or 'the top'} has "
                                   f"{len(items)} item(s), no [{step}]" + _hint(raw, fmt))
                n, c, ln = items[step]
                nxt.append((_join(path, n), c, ln))
            else:
                if isinstance(node, list):
                    raise BadInput(f"--select {expr!r} for {origin}: {path or 'the top'} is a "
                                   f"list; take its items with [*] or [N]" + _hint(raw, fmt))
                found = [(i, k) for i, k in enumerate(node) if str(k) == step]
                if not found:
                    raise BadInput(f"--select {expr!r} for {origin}: no key {step!r} at "
                                   f"{path or 'the top'}" + _hint(raw, fmt))
                i, k = found[0]
                name = f".{k}" if _is_name(k) else f"[{i}]"
                nxt.append((_join(path, name), node[k], _line(node, k)))
        level = nxt
    if not level:
        raise BadInput(f"--select {expr!r} for {origin}: selects no value (an empty list or "
                       "mapping)" + _hint(raw, fmt))
    out = []
    for path, node, line in level:
        at = f"{path} (line {line})" if line else path
        if isinstance(node, dict | list):
            kind = "a mapping" if isinstance(node, dict) else "a list"
            raise BadInput(f"--select {expr!r} for {origin}: {at} is {kind}, not a value; "
                           "select its values with [*] or a key" + _hint(raw, fmt))
        text = scalar_text(node)
        if text is None:
            raise BadInput(f"--select {expr!r} for {origin}: {at} is {_what(node)}, neither a "
                           "number nor text; select numbers or strings")
        where = str(line) if fmt == "csv" else path
        out.append(Value(where, text, line))
    if fmt == "csv" and tree is raw and _header_taken_for_data(raw, out):
        raise BadInput(f"--select {expr!r} for {origin}: line {out[0].line} is a header row (text "
                       "over a column of numbers), and a position reads every row as data; "
                       "select the column by its name in the header row instead")
    return out


def _header_taken_for_data(rows: list, got: list[Value]) -> bool:
    """Whether a positional CSV select took a header row's text over a column of numbers."""
    from plimsoll_ci.match.canonical import classify

    if not rows or not got or not _looks_like_header(rows):
        return False
    first = rows.lines[0] if isinstance(rows, _Seq) else 0
    head = [v for v in got if v.line == first]
    body = [v for v in got if v.line != first]
    return bool(head and body) and all(classify(v.text)[0] == "number" for v in body)


def _what(node: Any) -> str:
    if isinstance(node, bool):
        return "a boolean"
    if node is None:
        return "empty (null)"
    if isinstance(node, float):
        return "not a finite number"
    return f"a {type(node).__name__}"


def scalar_text(node: Any) -> str | None:
    """A scalar as a values-file line would hold it (an integer in decimal, a date in ISO form),
    or None for a boolean, a null, a NaN or infinity, a list or a mapping."""
    import math

    if isinstance(node, bool) or node is None or isinstance(node, dict | list):
        return None
    if isinstance(node, int):
        try:
            return str(node)
        except ValueError:  # past the interpreter's digit limit
            return None
    if isinstance(node, float):
        return repr(node) if math.isfinite(node) else None
    if isinstance(node, str):
        return node
    iso = getattr(node, "isoformat", None)  # YAML and TOML dates and times
    return iso() if callable(iso) else None


# --------------------------------------------------------------------------- candidate paths


def check_bounds(tree: Any, origin: str) -> int:
    """The number of nodes a walk of `tree` meets (a part shared through aliases counted each
    time), counted over its distinct parts only, so a "billion laughs" file costs what it
    holds, not what it expands to; BadInput past `MAX_NODES` or `MAX_DEPTH`."""
    sizes: dict[int, int] = {}

    def size(node: Any, depth: int) -> int:
        if not isinstance(node, dict | list):
            return 1
        known = sizes.get(id(node))
        if known is not None:
            return known
        if depth >= MAX_DEPTH:
            raise BadInput(f"values file {origin}: nested deeper than {MAX_DEPTH} levels")
        total = 1
        for child in (node.values() if isinstance(node, dict) else node):
            total += size(child, depth + 1)
            if total > MAX_NODES:
                raise BadInput(f"values file {origin}: more than {MAX_NODES:,} nodes (aliases "
                               "count each time they are met); give a smaller file")
        sizes[id(node)] = total
        return total

    return size(tree, 0)


def leaves(tree: Any, origin: str) -> Iterator[tuple[str, Any]]:
    """(the path with every list item and positional key as [*], a scalar) for every scalar of
    `tree`, within `MAX_NODES` and `MAX_DEPTH` (BadInput past either)."""
    seen = 0
    stack: list[tuple[str, Any, int]] = [("", tree, 0)]
    while stack:
        path, node, depth = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise BadInput(f"values file {origin}: more than {MAX_NODES:,} nodes (aliases count "
                           "each time they are met); give a smaller file")
        if isinstance(node, dict | list):
            if depth >= MAX_DEPTH:
                raise BadInput(f"values file {origin}: nested deeper than {MAX_DEPTH} levels")
            kids = [(_join(path, n if n.startswith(".") else "[*]"), c, depth + 1)
                    for n, c, _ in _children(node)]
            stack += reversed(kids)
        else:
            yield path, node


def _kind(node: Any) -> str | None:
    from plimsoll_ci.match.canonical import classify

    text = scalar_text(node)
    if text is None:
        return None
    if isinstance(node, int | float):
        return "number"
    return classify(text)[0] if text.strip() else None


def _counts(tally: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in sorted(tally.items()))


def candidates(tree: Any, origin: str, fmt: str = "yaml") -> list[str]:
    """The paths a `--select` could take, most values first: `heldout.seeds[*] (16 numbers)`.
    Paths through a list or a mapping of values first; single values only when there are none.
    A CSV's columns are named by position, or by a header row's name only over a column of
    numbers (a text column's first cell may be a value of a file without a header row)."""
    if fmt == "csv":
        return _csv_candidates(tree)
    groups: dict[str, dict[str, int]] = {}
    for path, node in leaves(tree, origin):
        kind = _kind(node)
        if kind is not None:
            tally = groups.setdefault(path, {})
            tally[kind] = tally.get(kind, 0) + 1
    many = {p: t for p, t in groups.items() if "[*]" in p}
    ranked = sorted((many or groups).items(), key=lambda pt: -sum(pt[1].values()))
    return [f"{path or '[*]'} ({_counts(tally)})" for path, tally in ranked]


def _csv_candidates(rows: list) -> list[str]:
    header = _looks_like_header(rows)
    body = rows[1:] if header else rows
    width = max((len(r) for r in rows), default=0)
    out = []
    for k in range(width):
        tally: dict[str, int] = {}
        for row in body:
            kind = _kind(row[k]) if k < len(row) else None
            if kind is not None:
                tally[kind] = tally.get(kind, 0) + 1
        if not tally:
            continue
        name = rows[0][k] if header and k < len(rows[0]) else ""
        if header and set(tally) == {"number"} and _is_name(name):
            out.append(f"{name} ({_counts(tally)})")
        elif header:
            out.append(f"column {k + 1} by its name in the header row ({_counts(tally)})")
        else:
            out.append(f"[*][{k}] ({_counts(tally)})")
    return out


def _hint(tree: Any, fmt: str, origin: str = "") -> str:
    try:
        paths = candidates(tree, origin, fmt)
    except BadInput:
        return ""
    if not paths:
        return "; it holds no number or text to select"
    more = f", and {len(paths) - _HINTS} more" if len(paths) > _HINTS else ""
    return "; paths it could take: " + ", ".join(paths[:_HINTS]) + more


def refusal(path: str, tree: Any, fmt: str) -> BadInput:
    """The error for a structured file given without `--select`: it is never read as lines."""
    return BadInput(f"values file {path} is {fmt.upper()}: give --select PATH to choose its "
                    f"values (it is never read as lines)" + _hint(tree, fmt, path)
                    + " (see docs/withheld-sets.md)")


def values(data: bytes, path: str, fmt: str, expr: str | None) -> list[Value]:
    """The values `expr` selects in the structured file `path` (its bytes `data`, format `fmt`);
    BadInput when `expr` is None (with the paths it could take) or selects badly."""
    tree = parse(data, fmt, path)
    check_bounds(tree, path)  # before anything walks it
    if expr is None:
        raise refusal(path, tree, fmt)
    return select(tree, expr, path, fmt)


def scalars(name: str, data: bytes) -> tuple[str, list[str]] | None:
    """(its format, every number and string of it as text) when `data` is a structured file (by
    `structure`); None for a plain file or one that does not parse or breaks a bound (the
    withheld guard's look at a staged file: it never raises). Only a `.txt` or a name without an
    extension is recognised by content here: a commit's Markdown and source files are not values
    files."""
    suffix = Path(name).suffix.lower()
    if suffix not in EXTENSIONS and suffix not in ("", ".txt"):
        return None
    try:
        fmt = structure(name, data)
        if fmt is None:
            return None
        tree = parse(data, fmt, name)
        check_bounds(tree, name)
        out = []
        for _, node in leaves(tree, name):
            text = scalar_text(node)
            if text is not None and text.strip():
                out.append(text)
        return fmt, out
    except BadInput:
        return None
