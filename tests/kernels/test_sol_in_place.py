"""In-place references (SOL-ExecBench's destination-passing `moe_index_add`): a change to an
input the reference also changes is part of the result, compared with the reference's; a
change to any other input is a cheat (kernels/input_changes.py).

The fixture has the shape of upstream's `tests/samples/moe_index_add` (NVIDIA/SOL-ExecBench
@3fa0f1f/c720752: `final_hidden_states.index_add_(0, token_indices, expert_outputs)` on
custom inputs, returned; one output of the same shape, destination passing), written here
small (hidden_size 64, a handful of tokens) rather than copied, so each run takes a second
under the interpreter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kernels.test_sol_execbench import assert_verdict, bench_cli

REFERENCE = """import torch


def get_inputs(axes_and_scalars, device):
    tokens = axes_and_scalars["num_tokens"]
    selected = axes_and_scalars["num_selected"]
    hidden = axes_and_scalars["hidden_size"]
    return {
        "final_hidden_states": torch.randn(tokens, hidden, device=device),
        "expert_outputs": torch.randn(selected, hidden, device=device),
        "token_indices": torch.randint(0, tokens, (selected,), dtype=torch.long, device=device),
    }


@torch.no_grad()
def run(final_hidden_states, expert_outputs, token_indices):
    final_hidden_states.index_add_(dim=0, index=token_indices, source=expert_outputs)
    return final_hidden_states
"""

_KERNEL = """import torch
import triton
import triton.language as tl


@triton.jit
def _index_add(dst, src, idx, H, SCALE: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    col = tl.arange(0, BLOCK)
    mask = col < H
    target = tl.load(idx + row)
    vals = tl.load(src + row * H + col, mask=mask)
    tl.atomic_add(dst + target * H + col, vals * SCALE, mask=mask)


def run(final_hidden_states, expert_outputs, token_indices, output):
    H = final_hidden_states.shape[1]
    {BODY}
"""
_IN_PLACE = "_index_add[(expert_outputs.shape[0],)](final_hidden_states, expert_outputs, token_indices, H, {SCALE}, BLOCK=64)\n    output.copy_(final_hidden_states)"
_RETURNING = _KERNEL.replace(", token_indices, output):", ", token_indices):").replace(
    "{BODY}",
    _IN_PLACE.replace("{SCALE}", "1.0").replace(
        "output.copy_(final_hidden_states)", "return final_hidden_states"
    ),
)
KERNELS = {
    # accumulates into final_hidden_states, as the reference does, and copies it out
    "in_place": _KERNEL.replace("{BODY}", _IN_PLACE.replace("{SCALE}", "1.0")),
    # the same, but also scales expert_outputs, which the reference leaves alone
    "other_input": _KERNEL.replace(
        "{BODY}", _IN_PLACE.replace("{SCALE}", "1.0") + "\n    expert_outputs.mul_(2.0)"
    ),
    # changes the right input, wrongly (adds twice the expert outputs)
    "wrong_in_place": _KERNEL.replace("{BODY}", _IN_PLACE.replace("{SCALE}", "2.0")),
    # leaves final_hidden_states alone and writes the right sum into output only
    "out_of_place": _KERNEL.replace(
        "{BODY}",
        "output.copy_(final_hidden_states)\n    "
        "_index_add[(expert_outputs.shape[0],)](output, expert_outputs, token_indices, H, 1.0, BLOCK=64)",
    ),
}


def make_moe_workspace(path: Path, kernel: str) -> Path:
    """`returns_input` is a value-returning solution (destination_passing_style false) that
    returns the input it changed, as the reference does; the others are destination passing."""
    path.mkdir(parents=True)
    tensor = {"dtype": "float32", "description": None}
    definition = {
        "name": "moe_index_add_h64",
        "op_type": None,
        "axes": {
            "num_tokens": {"type": "var"},
            "num_selected": {"type": "var"},
            "hidden_size": {"type": "const", "value": 64},
        },
        "custom_inputs_entrypoint": "get_inputs",
        "inputs": {
            "final_hidden_states": {"shape": ["num_tokens", "hidden_size"], **tensor},
            "expert_outputs": {"shape": ["num_selected", "hidden_size"], **tensor},
            "token_indices": {"shape": ["num_selected"], "dtype": "int64", "description": None},
        },
        "outputs": {"output": {"shape": ["num_tokens", "hidden_size"], **tensor}},
        "reference": REFERENCE,
        "constraints": [],
    }
    custom = {name: {"type": "custom"} for name in definition["inputs"]}  # type: ignore[attr-defined]
    workload = {"uuid": "w1", "axes": {"num_tokens": 8, "num_selected": 16}, "inputs": custom}
    spec = {"languages": ["triton"], "target_hardware": ["LOCAL"], "entry_point": "kernel.py::run"}
    spec["destination_passing_style"] = kernel != "returns_input"
    solution = {"name": "moe_v1", "definition": definition["name"], "author": "t", "spec": spec}
    (path / "definition.json").write_text(json.dumps(definition, indent=2))
    (path / "reference.py").write_text(REFERENCE)
    (path / "workload.jsonl").write_text(json.dumps(workload) + "\n")
    (path / "solution.json").write_text(json.dumps({**solution, "sources": [{"path": "kernel.py"}]}))
    (path / "kernel.py").write_text(_RETURNING if kernel == "returns_input" else KERNELS[kernel])
    return path


@pytest.mark.parametrize(
    ("kernel", "kind", "says"),
    [
        ("in_place", None, None),
        ("returns_input", None, None),  # an output that is the changed input is not a "view" cheat
        (
            "other_input",
            "cheat",
            "modified its inputs in place: input 1, which the reference leaves unchanged",
        ),
        (
            "wrong_in_place",
            "wrong_result",
            "input 0, which the reference changes in place, differs from the reference",
        ),
        (
            "out_of_place",
            "wrong_result",
            "the reference changes input 0 in place (part of its result); the candidate left it unchanged",
        ),
    ],
)
def test_in_place_reference_verdicts(tmp_path: Path, kernel: str, kind: str | None, says: str | None) -> None:
    ws = make_moe_workspace(tmp_path / "moe", kernel)
    assert_verdict(ws, kind, says)


# Does the work only on input objects it has not seen: the timed calls (one input set, called
# over and over) launch a no-op and leave the zeroed output as it is.
_SKIPS_TIMED = _KERNEL.replace(
    "def run(final_hidden_states, expert_outputs, token_indices, output):\n    H = final_hidden_states.shape[1]\n    {BODY}",
    """_SEEN = []


@triton.jit
def _noop(x):
    tl.store(x, tl.load(x))


def run(final_hidden_states, expert_outputs, token_indices, output):
    if any(seen is final_hidden_states for seen in _SEEN):
        _noop[(1,)](output)
        return
    _SEEN.append(final_hidden_states)
    H = final_hidden_states.shape[1]
    {BODY}""",
).replace("{BODY}", _IN_PLACE.replace("{SCALE}", "1.0"))

# Refuses inputs that are not finite: the reference scales what it accumulates by 1e10, so
# inputs its timed calls keep changing reach inf unless they are restored before each call.
_EXPLODING_REFERENCE = REFERENCE.replace(
    "    return final_hidden_states", "    final_hidden_states.mul_(1e10)\n    return final_hidden_states"
)
_FINITE_ONLY = (
    KERNELS["in_place"]
    .replace(
        "    H = final_hidden_states.shape[1]",
        "    assert bool(torch.isfinite(final_hidden_states).all()), 'inputs drifted to inf'\n"
        "    H = final_hidden_states.shape[1]",
    )
    .replace(
        "output.copy_(final_hidden_states)",
        "final_hidden_states.mul_(1e10)\n    output.copy_(final_hidden_states)",
    )
)


def test_timed_calls_of_an_in_place_problem_are_checked(tmp_path: Path) -> None:
    """SOL-ExecBench copies the original inputs into fresh tensors before every timed call: a
    candidate that does nothing in its timed calls is caught by the verified ones."""
    ws = make_moe_workspace(tmp_path / "moe", "in_place")
    (ws / "kernel.py").write_text(_SKIPS_TIMED)
    _, result, stderr = bench_cli(ws, "--seeds", "2")
    error = result.get("error") or {}
    assert result["passed"] is False and error.get("kind") == "cheat", (stderr, error, result.get("configs"))
    assert "timed call" in error["message"], error["message"]


def test_inputs_changed_in_place_are_restored_before_each_timed_call(tmp_path: Path) -> None:
    ws = make_moe_workspace(tmp_path / "moe", "in_place")
    (ws / "reference.py").write_text(_EXPLODING_REFERENCE)
    definition = json.loads((ws / "definition.json").read_text())
    (ws / "definition.json").write_text(json.dumps({**definition, "reference": _EXPLODING_REFERENCE}))
    (ws / "kernel.py").write_text(_FINITE_ONLY)
    code, result, stderr = bench_cli(ws, "--seeds", "2")
    assert code == 0 and result["passed"], (stderr, result.get("error"))
    assert result["configs"][0]["timed_outputs_checked"] >= 2, result["configs"][0]


# torch does all the work on the input it returns, as the reference; one no-op Triton launch.
_TORCH_RETURNS_INPUT = """import triton
import triton.language as tl


@triton.jit
def _noop(x):
    tl.store(x, tl.load(x))


def run(final_hidden_states, expert_outputs, token_indices):
    final_hidden_states.index_add_(0, token_indices, expert_outputs)
    _noop[(1,)](final_hidden_states)
    return final_hidden_states
"""


def test_framework_work_on_a_returned_changed_input_is_no_kernel(tmp_path: Path) -> None:
    """With every Triton launch skipped the output is still right: the run with launches
    skipped judges outputs and changed inputs as the gate does, not as views of an input."""
    ws = make_moe_workspace(tmp_path / "moe", "returns_input")
    (ws / "kernel.py").write_text(_TORCH_RETURNS_INPUT)
    assert_verdict(ws, "no_kernel")


def test_an_in_place_reference_with_an_unseeded_draw_is_judged_on_the_candidates_draw(tmp_path: Path) -> None:
    """Inputs drawn with Python's `random` (not seeded by the harness) differ when made again:
    the reference's result is then computed on a copy of the candidate's own draw, and the
    faithful in-place kernel passes."""
    ws = make_moe_workspace(tmp_path / "moe", "in_place")
    unseeded = REFERENCE.replace("import torch\n", "import random\n\nimport torch\n", 1).replace(
        "torch.randint(0, tokens, (selected,), dtype=torch.long, device=device)",
        "torch.tensor([random.randrange(tokens) for _ in range(selected)], dtype=torch.long, device=device)",
    )
    assert unseeded != REFERENCE
    (ws / "reference.py").write_text(unseeded)
    definition = json.loads((ws / "definition.json").read_text())
    (ws / "definition.json").write_text(json.dumps({**definition, "reference": unseeded}))
    assert_verdict(ws, None)


def test_a_pytorch_solution_defining_unused_triton_kernels_passes_with_a_warning(tmp_path: Path) -> None:
    """languages ["pytorch"] keeps its exemption (atrex's V0), but a kernel.py defining
    @triton.jit kernels it need not launch is said so on the result."""
    ws = make_moe_workspace(tmp_path / "moe", "in_place")
    solution = json.loads((ws / "solution.json").read_text())
    solution["spec"]["languages"] = ["pytorch"]
    (ws / "solution.json").write_text(json.dumps(solution))
    code, result, stderr = bench_cli(ws, "--seeds", "2")
    assert code == 0 and result["passed"], (stderr, result.get("error"))
    assert any("spec.languages" in m and "Triton kernels" in m for m in result["messages"]), result[
        "messages"
    ]
