"""The PostgreSQL store: a team's shared database (see store/base.py for the contract).

url.py keeps passwords out of sight, faults.py maps driver errors to StorageError subclasses,
schema.py holds the versioned DDL, index.py keeps term vectors, postings and statistics in
step inside a write transaction, search.py is the lexical candidate search, store.py the
`Store` itself.
"""
