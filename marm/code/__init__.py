"""The code graph: marm indexes repositories itself with tree-sitter.

- ``languages``: which grammar and which queries a file extension gets
- ``files``: which files a repository has (git), and which of them can be read
- ``extract``: one file's symbols, imports and references (calls, bases, imports)
- ``resolve``: references linked to symbols, import-first, each edge with its rule
- ``index``: incremental (re)indexing into ``derived.db`` and PageRank centrality
- ``query``: lookup, trace, architecture, impact over the stored graph
- ``links``: names -> symbols, for the concept graph
- ``drain``: the drain's sweep over repositories hooks marked dirty

Nothing here is imported by ``marm --help`` or by the memory ops: tree-sitter is
imported inside ``languages`` only when a file is parsed.
"""
