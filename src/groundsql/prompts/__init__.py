"""The one prompt loader. Prompts are template files beside this module, not strings in code.

A template file holds an optional `[system]` section and a `[user]` section (a follow-up
turn, such as a reflection, has only the latter). Placeholders are `$name`
(Python's `string.Template`), so SQL braces and percent signs need no escaping. Put what is
shared between calls (instructions, schema) in the system part and the question last: local
backends reuse the computed prefix, which on a CPU is most of the cost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template

from groundsql.llm.base import ChatRequest, Message

_SECTION = re.compile(r"^\[(system|user)\]\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Prompt:
    name: str
    system: Template | None
    user: Template

    def render(self, **values: object) -> tuple[Message, ...]:
        try:
            user = Message(role="user", content=self.user.substitute(values).strip())
            if self.system is None:
                return (user,)
            return (Message(role="system", content=self.system.substitute(values).strip()), user)
        except KeyError as err:
            raise ValueError(f"prompt {self.name!r} needs a value for {err}") from err

    def request(self, **values: object) -> ChatRequest:
        return ChatRequest(messages=self.render(**values))


@cache
def load_prompt(name: str) -> Prompt:
    text = resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    parts = _SECTION.split(text)
    # split() yields [preamble, "system", body, "user", body]; the preamble is a comment.
    names, bodies = parts[1::2], parts[2::2]
    if names not in (["system", "user"], ["user"]):
        raise ValueError(f"prompt {name!r} needs an optional [system] then a [user] section")
    sections = dict(zip(names, bodies))
    system = Template(sections["system"]) if "system" in sections else None
    return Prompt(name, system, Template(sections["user"]))
