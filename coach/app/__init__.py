"""The dashboard (``coach dash``): a Dash app over the same analysis as the CLI.

    from coach.app import create_app
    create_app().run(host="127.0.0.1", port=8050)
"""

from coach.app.app import create_app
from coach.app.context import Settings

__all__ = ["Settings", "create_app"]
