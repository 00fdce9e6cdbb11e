"""impact."""
