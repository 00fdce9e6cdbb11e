"""Build OpenLineage RunEvents for one dbt invocation from its artifacts.

Pure: no I/O, no environment, no logging setup; clocks and ids are inputs. Event shape follows
dbt-ol (a parent run for the invocation, a run per executed node with the invocation as parent,
aggregated test assertions per tested dataset), with per-dataset namespaces, datasets resolved
through ephemeral models, and `Z` timestamps with millisecond precision.

The entry points, gathered from where they live: `EventBuilder` (node_events, with its datasets
and runs halves), `build_events` and `iter_events` (invocation_events).
"""

from dbt_oml.events.datasets import DatasetRef
from dbt_oml.events.invocation_events import build_events, iter_events
from dbt_oml.events.node_events import BUILD_COMMANDS, JOB_TYPES, EventBuilder

__all__ = [
    "BUILD_COMMANDS",
    "JOB_TYPES",
    "DatasetRef",
    "EventBuilder",
    "build_events",
    "iter_events",
]
