"""The test method: how the runs were made (the plans, their parameters, the acceptance criteria and
why each band), and how to read the outcomes."""

from __future__ import annotations

from collections.abc import Sequence

from labctl.report.certify.inputs import Inputs
from labctl.report.certify.kinds import other
from labctl.report.certify.model import Bullets, Section, Table, Text
from labctl.report.certify.registry import Context, Kind
from labctl.report.run_view import CellView

OUTCOMES = (
    ("pass", "every judged value inside its pass band."),
    (
        "marginal",
        "outside the pass band but inside the marginal band: reported as an observation, does not fail.",
    ),
    ("fail", "a measured value outside its bands: the system under test failed the criterion."),
    (
        "no data",
        "too few samples to judge (a series covering less than 90 % of the window, a source that stopped): "
        "a fault of the measurement, never counted as a pass.",
    ),
    (
        "lab fault",
        "the lab did not do what the test needs (a client that never booted, an endpoint down): says nothing "
        "about the system, and is not a pass.",
    ),
    ("interrupted", "the run was stopped during the cell: what it measured is kept, and it is not a pass."),
)


def section(
    ctx: Context, parts: Sequence[tuple[Kind, list[CellView]]], unowned: Sequence[CellView]
) -> Section:
    inputs = ctx.inputs
    children = []
    for kind, cells in parts:
        blocks = kind.method(ctx, cells)
        if blocks:
            children.append(Section(kind.title, blocks))
    if unowned:
        children.append(Section("Other cells", other.method(unowned)))
    children.append(Section("Reading the outcomes", [Bullets(tuple(f"{w}: {d}" for w, d in OUTCOMES))]))
    repeats = _repeats(inputs)
    if repeats is not None:
        children.append(Section("Cells measured more than once", [repeats]))
    return Section("Test method", [Text(_intro(inputs))], children)


def _intro(inputs: Inputs) -> str:
    plans = sorted({c.summary.plan for c in inputs.cells})
    n = len(inputs.runs)
    return (
        f"The results come from {n} run{'s' if n > 1 else ''} of labctl test plans ({', '.join(plans) or 'none'}). "
        "Each plan is a matrix of cells, one per point of its parameters (a group size; a copiers/rebooters "
        "split and copy path; a desktop count and pre-booted share). A cell brings the machines to a "
        "known power state, starts the load at one instant, records the counters of the servers, arrays and "
        "hosts with the time stamps their sources give, reads each client's or desktop's results (from the "
        "streaming software, the session launchers), and returns the machines to their state. Every number is then judged against the plan's acceptance criteria "
        "over the same window, and the cell's outcome is its worst criterion's. Nothing in this document was "
        "edited by hand: every table, figure and finding is computed from the run folders listed in "
        "appendix B."
    )


def _repeats(inputs: Inputs) -> Table | None:
    if not inputs.repeats:
        return None
    rows = []
    for cid, earlier in sorted(inputs.repeats.items()):
        latest = next(c for c in inputs.cells if c.id == cid)
        for c in [*earlier, latest]:
            rows.append(
                [cid, inputs.run_of(c).run_id, c.outcome.value, "shown" if c is latest else "earlier"]
            )
    return Table.of(
        "Cells measured in more than one of the runs: the results show the latest; the verdict counts every one",
        ("cell", "run", "outcome", "in the results"),
        rows,
    )
