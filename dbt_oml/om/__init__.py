"""OpenMetadata: type mapping, names, and (coming) the client and bootstrap behind the transport."""
