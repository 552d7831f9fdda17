"""What an operation of a model produced: ``Ok(value)`` or ``Err(type, ...)`` (MODEL-2).

A model never raises for a legal sequence of operations; ``ModelError`` means
the caller asked for something the model does not describe (such as two
queue timeouts due at the same virtual instant, whose order only a scheduler
could decide: MODEL-4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordkit.errors import ModelError

__all__ = ["Err", "ModelError", "Ok", "Outcome"]


@dataclass(frozen=True)
class Ok:
    """The operation returned ``value``."""

    value: Any = None

    def __str__(self) -> str:
        return f"returns {self.value!r}"


@dataclass(frozen=True)
class Err:
    """The operation raised an instance of ``type``.

    ``exc`` is the very object expected when the rules fix it (COORD-17: ``join``
    re-raises the recorded exception itself); ``detail`` carries what else a
    checker may compare (the straggler threads of COORD-15).
    """

    type: type[BaseException]
    why: str = ""
    exc: BaseException | None = None
    detail: Any = None

    def __str__(self) -> str:
        what = f"{self.exc!r}" if self.exc is not None else self.type.__name__
        return f"raises {what}" + (f" ({self.why})" if self.why else "")


Outcome = Ok | Err
