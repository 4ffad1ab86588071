"""The PostgreSQL backend: a team's shared database (see store/seam.py for what it supplies).

url.py keeps passwords out of sight, faults.py maps driver errors to StorageError subclasses,
schema.py holds the versioned DDL, backend.py the pool, transactions, locks and postings,
bulk.py the import path, search.py the lexical candidate search over postings, store.py opens
the one Store (store/memories.py) on it.
"""
