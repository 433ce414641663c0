"""The memory records (`memory/v<N>.json`) and everything read from them: the records and the
memory manager (records.py), crash-safe writes under the workspace lock (atomic_io.py),
where a workspace's git is, the rule the locks, commits and history share (git_place.py),
dotted-path edits (record_edits.py), the fields today's atrex supervisor adds (atrex_fields.py)
and the one score every surface shows for a version (scores.py)."""
