"""The two pydantic bases of the wire contract: `ClosedModel` for kernelscope's own shapes
(an unknown key is an error), `OpenRecord` for records that other tools also write.

Memory files are produced by agents and scripts kernelscope does not control. A record
read here and written back must keep every key (known or not), every value exactly as it
was (an int stays an int, a string stays a string) and the key order, so that a masked
file differs from the original only in `masked`. `OpenRecord` keeps unknown keys
(`extra="allow"`), remembers the order keys arrived in, and dumps them in that order.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr, model_serializer, model_validator


class ClosedModel(BaseModel):
    """kernelscope's own shapes (results, params, summaries): an unknown key is an error."""

    # defer_build: a model's validator is built when first used, not when its module is
    # imported (the first lens imports every shape of the contract and uses a few: 4 MB less)
    model_config = ConfigDict(extra="forbid", defer_build=True)


class OpenRecord(BaseModel):
    """Base model that round-trips foreign JSON objects without losing keys or order."""

    model_config = ConfigDict(
        extra="allow", populate_by_name=True, validate_assignment=False, defer_build=True
    )  # defer_build: as ClosedModel

    _key_order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_key_order(cls, data: Any, handler: Any) -> Any:
        instance = handler(data)
        if isinstance(data, dict) and isinstance(instance, OpenRecord):
            instance._key_order = tuple(str(key) for key in data)
        return instance

    @model_serializer(mode="wrap")
    def _dump_in_original_order(self, handler: Any) -> dict[str, Any]:
        dumped: dict[str, Any] = handler(self)
        if not self._key_order:
            return dumped
        ordered = {key: dumped[key] for key in self._key_order if key in dumped}
        ordered.update((key, value) for key, value in dumped.items() if key not in ordered)
        return ordered

    def to_json_dict(self) -> dict[str, Any]:
        """The record as the JSON object it came from: set fields only, original order."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)
