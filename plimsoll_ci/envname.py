"""The name of an environment variable that holds a secret (`--key-env VAR` and the like).

A flag that says where a secret is takes a variable's NAME; a key pasted there by mistake must
never be printed back (an error, a log, a CI job's output). `variable` refuses what is not a name
(`[A-Za-z_][A-Za-z0-9_]*`) without repeating it, and `said` is how a message names a variable
that is not set: by name when it reads as one, not at all when it looks like a key (a long run
of letters and digits with no `_`, such as a hex key, is also a valid name).
"""

from __future__ import annotations

import re

from plimsoll_ci.errors import BadInput

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KEYLIKE_LEN = 20  # a name this long of letters and digits mixed, and no `_`, reads as a key


def variable(name: str, flag: str) -> str:
    """`name` when it is an environment variable's name; BadInput naming `flag` (never `name`)
    when it is not."""
    if not NAME.fullmatch(name or ""):
        raise BadInput(f"{flag} takes the NAME of an environment variable (letters, digits and "
                       "_, not starting with a digit), not a key: what was given is not a name "
                       "and is not repeated here; export the key in a variable and give its name")
    return name


def said(name: str) -> str:
    """How a message names variable `name`: itself when it reads as a name, else a placeholder
    (a key given in place of a name is never printed)."""
    keylike = (len(name) >= _KEYLIKE_LEN and "_" not in name
               and any(c.isdigit() for c in name) and any(c.isalpha() for c in name))
    if NAME.fullmatch(name) and not keylike:
        return name
    return "(the name given, not repeated: it looks like a key)"
