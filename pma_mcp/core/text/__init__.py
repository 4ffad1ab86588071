"""Text into scores, the same for every backend: lexicon (words, stopwords, speakers) →
analysis (index terms: SQLite FTS5's Porter stems, packed term ids) → bm25 (the maths) →
relevance (a query's terms, the cost bound, semantic_similarity in [0, 1)).
"""
