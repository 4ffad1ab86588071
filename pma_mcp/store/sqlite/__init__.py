"""The SQLite backend: one file, no setup (see store/seam.py for what it supplies).

db.py opens the file and maps driver errors, schema.py holds the migrations, backend.py the
statements, transactions and FTS5 index, salvage.py reads what it can from a damaged file,
store.py opens the one Store (store/memories.py) on it.
"""
