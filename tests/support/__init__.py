"""Support code for the tests: fakes, servers, fixtures and helpers the test modules share."""
