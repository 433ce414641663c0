"""What a workspace's history already knows, at the line being edited.

Pure engine functions (no LSP, no CLI, never torch or triton, never workspace code) that the
daemon serves and `kernelscope blame` / `kernelscope compare` print:

- `blame.blame_lines`: for each line of kernel.py, the version that introduced it and its
  measured effect against its parent (`BlameLine`);
- `tried.tried_hints`: for each meta-parameter, the values earlier versions used there and their
  scores (`TriedHint`);
- `fingerprint.check_fingerprint`: whether the kernel being saved is one history already measured
  or failed (`FingerprintCheck`);
- `compare.compare_versions`: two versions side by side (`VersionComparison`);
- `timeline.build_history`: the versions, their code and their numbers, read once per state.

`service.HistoryService` (or `service.history_service(root, db_url)`) caches everything per
history state. The one score of a version is memory's (`memory/scores.py`).
"""
