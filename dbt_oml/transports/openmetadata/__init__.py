"""The OpenMetadata transport (kind `openmetadata`), one concern per module.

transport.py buffers events and keeps what OM did not take (the openlineage-python Transport,
and the relay's sink: `deliver`); config.py reads its settings; answers.py reads OM's answers to
a batch; guard.py keeps OM's column lineage from being replaced by none; dotted.py sends the
edges of tables whose names hold a dot through PUT /api/v1/lineage. What is OM's own (its
client, its quirks, the entities it needs first) lives in `dbt_oml.om`.
"""

from dbt_oml.transports.openmetadata.config import OpenMetadataConfig
from dbt_oml.transports.openmetadata.transport import OpenMetadataTransport, om_event

__all__ = ["OpenMetadataConfig", "OpenMetadataTransport", "om_event"]
