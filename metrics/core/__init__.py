"""Pure evaluation core: numpy/scipy only, no Django. Public API listed in ``__all__``."""

__all__: list[str] = []
