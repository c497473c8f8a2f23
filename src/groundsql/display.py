"""Everything the command line shows passes through here, as literal text.

Database values, model output, error messages and paths are untrusted: in rich's markup a value
`[/bold]` is a syntax error (the answer was lost to a MarkupError) and `[red]x[/red]` would be
rendered, and raw control characters reach the terminal as escape sequences. So nothing shown
is ever parsed as markup, and control characters are made visible (`\\x1b`), keeping only
newlines and tabs.
"""

from __future__ import annotations

import re

from rich.console import Console
from rich.text import Text

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def visible(text: object) -> str:
    """`text` as a string whose control characters are shown as escapes, not obeyed."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                        else f"\\u{ord(m.group()):04x}", str(text))


def literal(text: object, style: str = "") -> Text:
    """A piece of text rich shows as it is (no markup), control characters made visible."""
    return Text(visible(text), style=style)


def show(console: Console, *parts: object, style: str = "") -> None:
    """Print one line made of literal parts; a part may be `(text, style)` to colour it."""
    line = Text(style=style)
    for part in parts:
        if isinstance(part, tuple):
            line.append(visible(part[0]), style=part[1])
        else:
            line.append(visible(part))
    console.print(line, soft_wrap=True, highlight=False)
