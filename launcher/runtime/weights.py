"""Read checkpoint tensors, or only this rank's slice of them, from safetensors files.

Layers call `load(name, shape, dim=..., shard=...)`; the reader checks the full shape, reads only the requested
slice (safe_open + get_slice, so a rank never materialises other ranks' parts), and remembers which names were used
so that extra tensors are reported once loading ends.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors import safe_open

from launcher.runtime.errors import WeightError
from launcher.runtime.modeldir import no_weights_message


class Shard:
    """Rows [start, stop) along one dimension, optionally zero-padded up to `size` (vocab padding)."""

    def __init__(self, start: int, stop: int, size: int | None = None):
        self.start, self.stop = start, stop
        self.size = size if size is not None else stop - start

    @classmethod
    def even(cls, total: int, rank: int, world: int) -> Shard:
        part = total // world
        return cls(rank * part, (rank + 1) * part)


class WeightReader:
    def __init__(self, model_dir: Path, ignore_prefixes: tuple[str, ...] = ()):
        self.model_dir = model_dir
        self.ignore_prefixes = ignore_prefixes
        self.file_of = self._index(model_dir)
        self.used: set[str] = set()
        self._handles: dict[Path, object] = {}

    @staticmethod
    def _index(model_dir: Path) -> dict[str, Path]:
        index = model_dir / "model.safetensors.index.json"
        if index.is_file():
            try:
                weight_map = json.loads(index.read_text())["weight_map"]
            except (OSError, json.JSONDecodeError, KeyError) as err:
                raise WeightError(f"cannot read {index}: {err}") from None
            return {name: model_dir / file for name, file in weight_map.items()}
        files = sorted(model_dir.glob("*.safetensors"))
        if not files:
            raise WeightError(no_weights_message(model_dir))
        file_of: dict[str, Path] = {}
        for file in files:
            with _open(file) as handle:
                for name in handle.keys():  # noqa: SIM118 - safe_open is not iterable
                    file_of[name] = file
        return file_of

    def _handle(self, file: Path):
        if file not in self._handles:
            if not file.is_file():
                raise WeightError(f"weight file {file} listed in the index is missing")
            self._handles[file] = _open(file)
        return self._handles[file]

    def release(self) -> None:
        """Close the files: their mapped pages stop counting towards this process's memory."""
        self._handles.clear()

    def has(self, name: str) -> bool:
        return name in self.file_of

    def shape(self, name: str) -> tuple[int, ...]:
        """The full shape of `name` as stored (for tensors stored in more than one layout)."""
        return self._view(name)[1]

    def _view(self, name: str):
        if name not in self.file_of:
            raise WeightError(f"tensor {name} is missing from the checkpoint in {self.model_dir}")
        file = self.file_of[name]
        try:
            view = self._handle(file).get_slice(name)
            return view, tuple(view.get_shape())
        except WeightError:
            raise
        except Exception as err:
            raise WeightError(f"cannot read tensor {name} from {file.name}: {err}") from None

    def load(
        self,
        name: str,
        shape: tuple[int, ...],
        dim: int = 0,
        shard: Shard | None = None,
        dtype: torch.dtype | None = None,
    ) -> torch.Tensor:
        """The tensor `name` of full shape `shape`, or its `shard` along `dim`, converted to `dtype`."""
        view, actual = self._view(name)
        file = self.file_of[name]
        if actual != tuple(shape):
            raise WeightError(f"tensor {name} has shape {list(actual)}, expected {list(shape)} from config.json")
        index = [slice(None)] * len(shape)
        if shard is not None:
            index[dim] = slice(shard.start, min(shard.stop, shape[dim]))
        try:
            tensor = view[tuple(index)]
        except Exception as err:
            raise WeightError(f"cannot read tensor {name} from {file.name} (truncated file?): {err}") from None
        self.used.add(name)
        if shard is not None and tensor.shape[dim] < shard.size:
            pad = list(tensor.shape)
            pad[dim] = shard.size - tensor.shape[dim]
            tensor = torch.cat([tensor, tensor.new_zeros(pad)], dim=dim)
        return tensor.to(dtype) if dtype is not None else tensor

    def check_all_used(self) -> None:
        extra = sorted(n for n in self.file_of if n not in self.used and not n.startswith(self.ignore_prefixes))
        if extra:
            more = f" and {len(extra) - 3} more" if len(extra) > 3 else ""
            raise WeightError(f"unexpected tensor {', '.join(extra[:3])}{more} in the checkpoint (does config.json match?)")


def _open(file: Path):
    try:
        return safe_open(str(file), framework="pt")
    except Exception as err:
        raise WeightError(f"cannot open weight file {file} (truncated or not safetensors?): {err}") from None
