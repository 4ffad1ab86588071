"""Keeping an install healthy: doctor (diagnosis), repair (salvage a damaged file) and
migrate (copy a store to another backend). They may open a store file directly."""
