"""The rules: pure values and policy, no I/O, no environment, no driver.

models, errors and validation are the vocabulary; scoring, collector, budget, editing,
consolidation, namespaces and redact the rules; text/ turns text into terms and scores;
export_format is the export file's shape. Nothing here imports a layer above it.
"""
