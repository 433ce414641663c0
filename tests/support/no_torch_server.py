"""Starts `kernelscope serve` with torch and triton made unimportable in the server process
only (benchmark children import them as usual): the daemon must never need them."""

import sys


class _Forbid:
    def find_spec(self, name, path=None, target=None):  # type: ignore[no-untyped-def]
        if name.split(".")[0] in ("torch", "triton"):
            raise ImportError(f"{name} must not be imported by the kernelscope daemon (test guard)")
        return None


sys.meta_path.insert(0, _Forbid())

from kernelscope.daemon.lsp.server import serve  # noqa: E402

serve()
