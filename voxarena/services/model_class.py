"""A model service's class, found by convention: the one SDK model class its ``model.py`` defines.

A service folder ``voxarena/services/<role>s/<name>/`` serves ``<module>.model``'s class; the catalogue
names the module, never the class, so the class name lives once, in ``model.py``. Read by the detectors'
training registry (which class to load trained weights into) and by ``make generate`` (the README's
services table, from the class's GetInfo facts). Importing a model module is cheap by design: engines,
onnxruntime and torch are imported in ``load()``, not at the top of the module.
"""

from __future__ import annotations

import importlib
import inspect

from voxarena.sdk import DetectorModel, GeneratorModel, TransformModel

MODEL_BASES = (GeneratorModel, DetectorModel, TransformModel)


class ModelClassError(LookupError):
    """A service module without exactly one model class of its own; names the module and why."""


def model_class(module: str) -> type:
    """The SDK model subclass defined in ``{module}.model`` (a class it merely imports does not count)."""
    where = f"{module}.model"
    try:
        found = importlib.import_module(where)
    except ImportError as e:
        raise ModelClassError(f"{where}: cannot be imported ({e})") from e
    classes = [
        c
        for c in vars(found).values()
        if inspect.isclass(c) and issubclass(c, MODEL_BASES) and c.__module__ == where and not inspect.isabstract(c)
    ]
    if len(classes) != 1:
        names = ", ".join(sorted(c.__name__ for c in classes)) or "none"
        raise ModelClassError(f"{where}: defines {len(classes)} model classes ({names}); a service serves exactly one")
    return classes[0]


def class_path(module: str) -> str:
    """``package.model:ClassName`` of the service at ``module``."""
    return f"{module}.model:{model_class(module).__name__}"
