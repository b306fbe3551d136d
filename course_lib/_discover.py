"""Re-export the public names of every submodule of a package.

`course_lib.exercises`, `.viz` and `.widgets` hold one module per lesson; their
`__init__` calls this so a new lesson's module is picked up without editing a
shared list. A submodule lists its public names in `__all__`. A subpackage (such as
`viz.bertviz_views`) is a tool of its own, imported by its name: it is not re-exported.
"""
import importlib
import pkgutil


def export_submodules(package_name: str, namespace: dict) -> list[str]:
    """Import each non-private submodule and copy its `__all__` into `namespace`."""
    package = importlib.import_module(package_name)
    exported, origin = [], {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_") or info.ispkg:
            continue
        module = importlib.import_module(f"{package_name}.{info.name}")
        for name in getattr(module, "__all__", []):
            if name in origin:
                raise ImportError(f"{package_name}: both {origin[name]} and {info.name} "
                                  f"export {name!r}; rename one of them")
            origin[name] = info.name
            namespace[name] = getattr(module, name)
            exported.append(name)
    return exported
