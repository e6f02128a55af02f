"""One module per page: ``PATH``, ``NAV_LABEL``, ``TITLE``, ``layout(ctx, rest, query)`` and
``register(app, ctx)`` (the page's callbacks)."""
