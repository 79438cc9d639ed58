"""The client under test, clients/python/src/notifyhub, as the module ``notifyhub`` here.

Its package is named ``notifyhub``, as API clients import it; in this process that name is the service's own project
package (notifyhub/: settings, URLs, Celery), so the client's source is imported under another name, ``notifyhub_sdk``.
Its modules import each other relatively, so they load under any name; what they do is the same.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SOURCE = Path(__file__).resolve().parents[2] / "clients" / "python" / "src" / "notifyhub"
NAME = "notifyhub_sdk"


def _load() -> ModuleType:
    if NAME in sys.modules:
        return sys.modules[NAME]
    spec = importlib.util.spec_from_file_location(
        NAME, SOURCE / "__init__.py", submodule_search_locations=[str(SOURCE)]
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module
    spec.loader.exec_module(module)
    return module


notifyhub = _load()
