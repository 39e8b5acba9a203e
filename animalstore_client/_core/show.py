"""`show`: a value as messages print it, short and never raising.

It sits below every module that writes a message about a value (the argument
checks, the exceptions' pickling, the TLS and environment settings), and
imports nothing of the package's, so any of them can use it.
"""

from __future__ import annotations

MAX_SHOWN = 200
"""The longest text `show` returns; longer values are cut and end in ``...``."""


def show(value: object) -> str:
    """A short, safe repr for messages: huge ints and long values are summarised, not printed.

    It never raises (short of ``BaseException``): a value whose repr fails, such
    as a list nested past the recursion limit or an object with a broken
    ``__repr__``, is named by its type instead.
    """
    if isinstance(value, int) and not isinstance(value, bool) and int.bit_length(value) > 128:
        # repr() of an int past 4300 digits raises ValueError; nobody reads 40 digits anyway.
        return f"an int of about {int(int.bit_length(value) * 0.30103) + 1} digits"
    try:
        if isinstance(value, (str, bytes, bytearray)) and len(value) > MAX_SHOWN:
            # Sliced first, so that a 10 MB string is not escaped whole only to be cut.
            text, cut = repr(value[:MAX_SHOWN]), True
        else:
            text, cut = repr(value), False
    except RecursionError:
        return f"a {type(value).__name__} nested too deeply to show"
    except Exception:  # noqa: BLE001 (a broken __repr__ must not hide the real error)
        return f"a {type(value).__name__}"
    if len(text) > MAX_SHOWN or cut:
        return text[: MAX_SHOWN - 3] + "..."
    return text
