"""The optimization workflow, as the seeds describe it: a probe of the edited kernel against
the last passing version (probe.py, with that rule), one recorded iteration (iterate.py), the
partial restart (restart.py), the git operations they need (git.py) and the demo (demo.py)."""
