"""The semantic model and the compiled path: a semantic model in the pack (model.py,
catalog.py, load.py, draft.py), what a question names (terms.py), the request a model fills
and its JSON schema (request.py), its compiler (compile.py) and verified queries (verified.py)."""
