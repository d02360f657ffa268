"""Pydantic request and response models of the API (`XCreate`, `XRead`, `XList`)."""
