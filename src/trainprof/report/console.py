"""The terminal: rich's Console and markup escaping, with what rich does to trace text bounded.

rich runs regexes over every string it prints, and three of them are quadratic in a string's
length (issue #45: a device name of `<[` x 20,000, 40 KB, cost 14 s of CPU in `analyze`):

  - ReprHighlighter, which colours numbers, paths and tags in each printed string
    (`<` then `[\\w\\W]*` then `>` is tried from every `<`);
  - rich.markup.escape, on a run of backslashes (`(\\\\*)\\[` from every backslash);
  - markup parsing, on a run of backslashes before a `[`.

So: `console()` highlights strings of at most HIGHLIGHT_CHARS characters (every line a report
prints is shorter; a longer one is printed plain), and `escape()` gives rich's result in linear
time, cut to SHOW_CHARS characters, which bounds what markup parsing can meet. Every renderer
takes its Console from `console()` and escapes record text with `escape()`.
"""

from __future__ import annotations

import re
from typing import Any

from rich.console import Console
from rich.highlighter import ReprHighlighter
from rich.text import Text

HIGHLIGHT_CHARS = 2000  # measured: ReprHighlighter on 2,000 characters of `<[` takes ~0.1 s
SHOW_CHARS = 2000  # ~25 lines of an 80-column terminal; real kernel names are < 6,000

_TAG = re.compile(r"\[[a-z#/@][^[]*?]")  # rich's tag, without its leading `\\*`


class _BoundedHighlighter(ReprHighlighter):
    def highlight(self, text: Text) -> None:
        if len(text) <= HIGHLIGHT_CHARS:
            super().highlight(text)


def console(**kwargs: Any) -> Console:
    """rich.console.Console(**kwargs), its highlighter bounded (see the module docstring)."""
    kwargs.setdefault("highlighter", _BoundedHighlighter())
    return Console(**kwargs)


def escape(markup: object) -> str:
    """rich.markup.escape(markup), in time linear in its length, and cut to SHOW_CHARS characters
    with "…" and the count of what was left out.

    rich's `(\\\\*)(\\[[a-z#/@][^[]*?])` tries `\\\\*` from every backslash of a run; here each tag
    is found from its `[` and the run before it is counted backwards once (a run belongs to
    the one tag it precedes, since matches do not overlap)."""
    text = str(markup)
    if len(text) > SHOW_CHARS:
        text = f"{text[:SHOW_CHARS]}…(+{len(text) - SHOW_CHARS:,} characters)"
    if "[" not in text:
        out = text
    else:
        parts, last = [], 0
        for m in _TAG.finditer(text):
            start = m.start()
            while start > last and text[start - 1] == "\\":
                start -= 1
            slashes = text[start: m.start()]
            parts.append(text[last:start])
            parts.append(f"{slashes}{slashes}\\{m.group()}")
            last = m.end()
        parts.append(text[last:])
        out = "".join(parts)
    if out.endswith("\\") and not out.endswith("\\\\"):
        out += "\\"
    return out
