"""The results store: runs, environment, points, metrics, raw samples and kernel tables in
SQLite (default) or PostgreSQL, through SQLAlchemy 2 Core. Entry points are in
`perfkit.store.api`; nothing is imported or opened at import time."""
