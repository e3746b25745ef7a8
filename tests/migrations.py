"""Moving the test database to a point in the migration history, for tests of data migrations."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(targets):
    """Migrate to ``targets`` (``[(app, migration), ...]``) and return the historical models' registry there."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def latest_targets():
    """The last migration of every app: where the rest of the suite expects the test database."""
    return MigrationExecutor(connection).loader.graph.leaf_nodes()
