"""nki.typing: type annotations for NKI kernels (`from nki.typing import tensor`); annotations only."""
from __future__ import annotations


class tensor:
    """The type of an NKI tensor in annotations (`x: tensor`, `x: tensor[...]`); tilescope checks nothing
    from it."""

    def __class_getitem__(cls, item):
        return cls


__all__ = ["tensor"]
