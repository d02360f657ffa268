"""Shared pieces of the dashboard's views: templates and who is looking.

The session, settings, blob store and auth are the API's own dependencies (server.api.deps,
server.auth): one commit point, one token check.
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from runtime import numbers, vocabulary
from runtime.modes import MODES
from server.auth import ANONYMOUS, Caller, require
from server.services.provenance import describe as provenance
from web import format as fmt
from web import measured

HERE = Path(__file__).parent
templates_dir = HERE / "templates"

templates = Jinja2Templates(directory=templates_dir)
templates.env.filters.update(fmt.FILTERS)
templates.env.globals["MODES"] = MODES
templates.env.globals["OUTCOMES"] = vocabulary.OUTCOMES  # the four outcomes, worst first (docs/dashboard.md §1)
templates.env.globals["OUTCOME_WORDS"] = vocabulary.WORDS
templates.env.globals["AICORE_US"] = numbers.AICORE_US  # units as written, never case-transformed  # the one list of modes (runtime.modes)
templates.env.filters["provenance"] = provenance  # a result's source, card and whether it is verified
# What was measured of a case, as a strip of squares (web/measured.py): of its latest results, or of one job's.
templates.env.filters["measured_case"] = lambda c: measured.strip(measured.of_case(c.get("sim"), c.get("npu")))
templates.env.filters["measured_job"] = lambda r, mode: measured.strip(measured.of_job_case(r, mode))
templates.env.globals["FLAG_EXPLANATION"] = (
    "The simulator does not write outputs on CPU hosts, so this is not a kernel defect.")

Reader = Annotated[Caller, Depends(require("read"))]
Submitter = Annotated[Caller, Depends(require("submit"))]


def viewer(caller: Caller | None) -> Caller | None:
    """The caller to show in the header (nobody, for anonymous readers)."""
    return None if caller is None or caller is ANONYMOUS else caller


def render(request: Request, template: str, caller: Caller | None, status_code: int = 200,
           **context: Any) -> HTMLResponse:
    return templates.TemplateResponse(request, template, {"viewer": viewer(caller), **context},
                                      status_code=status_code)
