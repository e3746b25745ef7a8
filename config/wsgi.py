import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()


def warm_up() -> None:
    """Load now what the first request of each page would otherwise wait for, once per web worker: the URLconf
    (it imports every view, the API and their libraries), the leaderboard's statistics (``scipy.stats``) and
    its figures (matplotlib's Agg canvas and fonts, and its SVG writer: the page's figures are SVG). Gunicorn
    imports this module in each worker before routing requests to it (docs/decisions.md "Warm web workers")."""
    import io

    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 - the property imports the URLconf
    import matplotlib
    import scipy.stats  # noqa: F401

    matplotlib.use("Agg")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(1, 1))
    figure.add_subplot().text(0, 0, "warm")
    FigureCanvasAgg(figure).draw()
    figure.savefig(io.BytesIO(), format="svg")


warm_up()
