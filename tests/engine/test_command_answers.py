"""What Helix's user reads on the status line after a command (engine/views/command_answers.py):
a sentence for every command whose answer has no markdown, made from the protocol's own result
models; before, the answer's JSON (`kernelscope.cancel: {"cancelled":[]}`)."""

from __future__ import annotations

from kernelscope.daemon.engine.views.command_answers import WORDED, command_answer_line
from kernelscope.protocol.commands import MaskHalfResult
from kernelscope.protocol.experiment import KernelExperiment
from kernelscope.protocol.lsp import CancelResult, Declined, JobStarted, UnmaskResult
from kernelscope.protocol.vocabulary import COMMANDS

WITH_MARKDOWN = {"kernelscope.showHistory", "kernelscope.compare"}  # shown as documents


def test_every_command_without_markdown_has_a_sentence() -> None:
    assert set(COMMANDS) - WITH_MARKDOWN == WORDED


def test_answers_read_as_sentences() -> None:
    mask = MaskHalfResult(
        workspace="/w/kernel_opt_add",
        seed=7,
        candidates=["v1", "v2", "v4"],
        masked=["v1", "v4"],
        best_version="v3",
        best_metric=None,
        best_rule="highest speedup",
        next_version="v5",
    ).model_dump(mode="json")
    declined = Declined(workspace="/w/kernel_opt_add", question="Mask v1, v4?").model_dump(mode="json")
    started = JobStarted(job_id="j1", workspace="/w/kernel_opt_add", kind="benchmark").model_dump()
    exp = KernelExperiment(id="e7", score=1.4234, status="done", change_summary="BLOCK 256")
    said = {
        "maskHalf": command_answer_line("kernelscope.maskHalf", mask),
        "dry run": command_answer_line("kernelscope.maskHalf", {**mask, "dry_run": True}),
        "declined": command_answer_line("kernelscope.maskHalf", declined),
        "restart declined": command_answer_line("kernelscope.restart", declined),
        "unmask": command_answer_line("kernelscope.unmask", UnmaskResult(changed=["v1"]).model_dump()),
        "unmask none": command_answer_line("kernelscope.unmask", UnmaskResult(changed=[]).model_dump()),
        "record": command_answer_line("kernelscope.recordExperiment", exp.model_dump(mode="json")),
        "benchmark": command_answer_line("kernelscope.benchmark", started),
        "top": command_answer_line("kernelscope.topExperiments", [exp.model_dump(mode="json")]),
        "top none": command_answer_line("kernelscope.topExperiments", []),
        "cancel none": command_answer_line("kernelscope.cancel", CancelResult(cancelled=[]).model_dump()),
        "cancel two": command_answer_line(
            "kernelscope.cancel", CancelResult(cancelled=["a", "b"]).model_dump()
        ),
    }
    assert said == {
        "maskHalf": "kernelscope.maskHalf: masked v1, v4 (seed 7); kept v3 as best; next version v5",
        "dry run": "kernelscope.maskHalf: would mask v1, v4 (seed 7); kept v3 as best; next version v5",
        "declined": "kernelscope.maskHalf: declined: nothing was masked",
        "restart declined": "kernelscope.restart: declined: nothing was masked and no job started",
        "unmask": "kernelscope.unmask: unmasked v1",
        "unmask none": "kernelscope.unmask: nothing to unmask: already unmasked",
        "record": "kernelscope.recordExperiment: recorded experiment e7 (1.42x, done)",
        "benchmark": "kernelscope.benchmark: benchmark started in kernel_opt_add",
        "top": "kernelscope.topExperiments: best 1 experiment: e7 1.42x (BLOCK 256)",
        "top none": "kernelscope.topExperiments: no experiments recorded",
        "cancel none": "kernelscope.cancel: nothing to cancel: no job was running",
        "cancel two": "kernelscope.cancel: cancelled 2 jobs",
    }
    assert not any("{" in line for line in said.values())


def test_an_answer_of_a_shape_its_wording_does_not_know_is_shown_as_it_is() -> None:
    """The command has run when its answer is worded: a wording that raised on a shape it did
    not expect (None, an error object, a score that is not a number) turned the answer into an
    InternalError, which Helix drops, so a mask-half that masked was told to nobody (a review
    found these three). Such an answer is shown as its JSON, on one line."""
    assert command_answer_line("kernelscope.maskHalf", None) == "kernelscope.maskHalf: null"
    assert command_answer_line("kernelscope.topExperiments", {"error": "x"}) == (
        'kernelscope.topExperiments: {"error":"x"}'
    )
    odd = {"id": "e", "score": "n/a", "status": "done"}
    assert command_answer_line("kernelscope.recordExperiment", odd) == (
        'kernelscope.recordExperiment: {"id":"e","score":"n/a","status":"done"}'
    )
    one = KernelExperiment(id="e8", score=1.0, status="done", change_summary="one").model_dump(mode="json")
    line = command_answer_line("kernelscope.topExperiments", [{**one, "change_summary": "one\ntwo"}])
    assert "\n" not in line and "one two" in line, line


def test_a_mask_that_masked_nothing_says_why() -> None:
    """Half of one candidate is none: the demo (on a machine where v2 measures best) printed
    "mask-half: masked , kept best v2", in words of its own; it and Helix's status line say
    one sentence, which names the candidates and why nothing was masked."""
    from kernelscope.daemon.engine.views.command_answers import mask_half_sentence

    fields = dict(workspace="/w", seed=0, best_metric=None, best_rule="lowest latency", next_version="v4")
    none = MaskHalfResult(
        candidates=["v1"], masked=[], best_version="v2", latest_passing_version="v3", **fields
    )
    assert mask_half_sentence(none.model_dump(mode="json")) == (
        "masked nothing (seed 0; candidates: v1, half of 1 is none); kept v2 as best and v3 as the latest; "
        "next version v4"
    )
    one = MaskHalfResult(
        candidates=["v1", "v2"], masked=["v2"], best_version="v3", latest_passing_version="v3", **fields
    )
    assert (
        mask_half_sentence(one.model_dump(mode="json"))
        == "masked v2 (seed 0); kept v3 as best; next version v4"
    )
