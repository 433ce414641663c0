"""Starting and supervising user code: the benchmark request and its child process (bench.py),
resource limits and process-group kills (child_limits), the scratch copy every run works in
(scratch), warm workers that fork a child per job (warm_worker), reading a workspace's own gate
command (gate_output), local and Ray executors (executors), fan-out over machines and
configuration groups (fanout, config_groups). Nothing here imports torch: the child does."""
