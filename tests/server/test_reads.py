"""Reads: jobs, reports, logs, artifacts, operators, history and cases, from stored real reports."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from server.services.results import validate_report

API = "/api/v1"


@pytest.fixture
def seeded(seed, sim_report, broken_report, make_npu_report):
    """Three operators: the SIM-garbage flag, a structural error and a kernel defect."""
    flag = seed.result("scale_add", sim=sim_report, npu=make_npu_report(sim_report, {}),
                       labels={"branch": "main", "author": "li", "commit": "c1"})
    broken = seed.result("missing_vec_tiles", sim=broken_report, labels={"branch": "dev", "author": "wang"})
    defect_npu = make_npu_report(sim_report, {"scale_add_64x256": "precision_fail"}, max_abs_diff=0.5)
    defect = seed.result("scale_add_bad", sim=sim_report, npu=defect_npu, labels={"branch": "main", "author": "li"})
    return {"flag": flag, "broken": broken, "defect": defect}


def test_job_after_its_result(client, hdr, seeded):
    job = client.get(f"{API}/jobs/{seeded['flag'][0]}", headers=hdr["read"]).json()
    assert job["status"] == "succeeded" and job["attempts"] == 1 and job["worker"] == "seed-worker"
    assert job["queue_position"] is None and job["mode"] == "sim" and job["operator"] == "scale_add"
    assert job["summary"] == {"verdicts": {"sim_garbage_graph_ok": 2}, "cases": 2, "outcome": "acceptable",
                              "outcomes": {"acceptable": 2}}
    assert job["env_fingerprint"]["pypto"] == "0.2.0"
    t = job["timings"]
    assert t["started_at"] and t["finished_at"] and t["duration_s"] is not None and t["created_at"].endswith("Z")
    broken = client.get(f"{API}/jobs/{seeded['broken'][0]}", headers=hdr["read"]).json()
    assert broken["status"] == "failed"


def test_job_list_and_unknown_job(client, hdr, seeded):
    items = client.get(f"{API}/jobs", headers=hdr["read"], params={"operator": "scale_add"}).json()["items"]
    assert sorted(j["id"] for j in items) == sorted(seeded["flag"])
    assert client.get(f"{API}/jobs/999", headers=hdr["read"]).status_code == 404
    assert client.get(f"{API}/jobs/999/report", headers=hdr["read"]).json() == {"detail": "no job 999"}


def test_report_is_the_stored_runtime_json(client, hdr, seed, seeded, sim_report):
    r = client.get(f"{API}/jobs/{seeded['flag'][0]}/report", headers=hdr["read"])
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    # Stored as the runtime's report classes read it (the one contract), so fields the fixture predates
    # come back with their defaults; nothing the worker posted is lost or changed.
    assert r.json() == json.loads(json.dumps(validate_report(sim_report)))
    assert _contains(r.json(), sim_report)
    queued = seed.submit("relu")[0]
    r = client.get(f"{API}/jobs/{queued}/report", headers=hdr["read"])
    assert r.status_code == 404 and "no report yet" in r.json()["detail"]


def _contains(stored, posted) -> bool:
    """Every value the worker posted is in the stored report, unchanged."""
    if isinstance(posted, dict):
        return isinstance(stored, dict) and all(k in stored and _contains(stored[k], v) for k, v in posted.items())
    if isinstance(posted, list):
        return isinstance(stored, list) and len(stored) == len(posted) and all(map(_contains, stored, posted))
    return stored == posted


def test_logs_per_case(client, hdr, seeded, broken_report):
    logs = client.get(f"{API}/jobs/{seeded['broken'][0]}/logs", headers=hdr["read"]).json()
    [case] = logs["cases"]
    expected = broken_report["cases"][0]["logs"]
    assert case["case"] == "missing_vec_tiles_32x64" and case["verdict"] == "structural_error"
    assert (case["stdout"], case["stderr"], case["plog"]) == (expected["stdout"], expected["stderr"], expected["plog"])
    assert logs["artifacts"] == ["report-attempt1.json"]


def test_artifact_listing_and_download(client, hdr, seeded):
    job_id = seeded["flag"][0]
    listing = client.get(f"{API}/jobs/{job_id}/artifacts", headers=hdr["read"]).json()
    assert [a["path"] for a in listing["items"]] == ["report-attempt1.json"]
    r = client.get(f"{API}/jobs/{job_id}/artifacts/report-attempt1.json", headers=hdr["read"])
    assert r.status_code == 200 and r.json()["mode"] == "sim"
    assert len(r.content) == listing["items"][0]["size_bytes"]
    assert client.get(f"{API}/jobs/{job_id}/artifacts/nope.txt", headers=hdr["read"]).status_code == 404


@pytest.mark.parametrize("path", ["%2e%2e/%2e%2e/secret", "a/%2e%2e/%2e%2e/x", "%2Fetc%2Fpasswd"])
def test_artifact_paths_cannot_leave_the_job_folder(client, hdr, seeded, path):
    r = client.get(f"{API}/jobs/{seeded['flag'][0]}/artifacts/{path}", headers=hdr["read"])
    assert r.status_code in (404, 422)
    assert r.status_code == 422 or "no artifact" in r.json()["detail"]


def test_operators_overview(client, hdr, seeded):
    body = client.get(f"{API}/operators", headers=hdr["read"]).json()
    assert [(o["name"], o["combined_verdict"]) for o in body["items"]] == [
        ("scale_add_bad", "kernel_defect"), ("missing_vec_tiles", "structural_error"),
        ("scale_add", "sim_garbage_npu_ok")]
    assert body["total"] == 3
    assert body["counts"] == {"kernel_defect": 1, "structural_error": 1, "sim_garbage_npu_ok": 1}
    flag = body["items"][2]
    assert flag["sim_verdict"] == "sim_garbage_graph_ok" and flag["npu_verdict"] == "pass"
    assert flag["graph_status"] == "pass" and flag["npu_max_abs_diff"] == pytest.approx(1e-4)
    assert flag["labels"] == {"branch": "main", "author": "li", "commit": "c1"}


@pytest.mark.parametrize(("params", "names"), [
    ({"verdict": "kernel_defect"}, ["scale_add_bad"]),
    ({"verdict": ["kernel_defect", "sim_garbage_npu_ok"]}, ["scale_add_bad", "scale_add"]),
    ({"q": "scale"}, ["scale_add_bad", "scale_add"]),
    ({"mode": "npu"}, ["scale_add_bad", "scale_add"]),
    ({"branch": "dev"}, ["missing_vec_tiles"]),
    ({"author": "li", "limit": 1}, ["scale_add_bad"]),
    ({"author": "li", "limit": 1, "offset": 1}, ["scale_add"]),
    ({"since": "2999-01-01T00:00:00"}, []),
])
def test_operator_filters(client, hdr, seeded, params, names):
    body = client.get(f"{API}/operators", headers=hdr["read"], params=params).json()
    assert [o["name"] for o in body["items"]] == names


@pytest.mark.parametrize("params", [{"verdict": "pass_ish"}, {"mode": "gpu"}, {"limit": 0}, {"limit": 501},
                                    {"since": "yesterday"}, {"offset": -1}])
def test_operator_filters_reject_bad_values(client, hdr, params):
    r = client.get(f"{API}/operators", headers=hdr["read"], params=params)
    assert r.status_code == 422
    assert r.json()["detail"].startswith("query.")


def test_operator_detail_pairs_sim_and_npu_per_case(client, hdr, seeded):
    body = client.get(f"{API}/operators/scale_add_bad", headers=hdr["read"]).json()
    assert body["operator"]["combined_verdict"] == "kernel_defect"
    cases = {c["case"]: c for c in body["cases"]}
    assert cases["scale_add_64x256"]["combined_verdict"] == "kernel_defect"
    assert cases["scale_add_64x256"]["npu"]["verdict"] == "precision_fail"
    assert cases["scale_add_64x256"]["npu"]["max_abs_diff"] == 0.5
    assert cases["scale_add_32x64"]["combined_verdict"] == "sim_garbage_npu_ok"
    assert cases["scale_add_32x64"]["sim"]["verdict"] == "sim_garbage_graph_ok"
    assert cases["scale_add_32x64"]["sim"]["graph_status"] == "pass"
    assert client.get(f"{API}/operators/nope", headers=hdr["read"]).status_code == 404


def test_history(client, hdr, seed, seeded, sim_report):
    again = seed.result("scale_add", sim=sim_report)  # a second SIM run
    body = client.get(f"{API}/operators/scale_add/history", headers=hdr["read"]).json()
    points = body["points"]
    assert [(p["job_id"], p["mode"]) for p in points] == [(seeded["flag"][0], "sim"), (seeded["flag"][1], "npu"),
                                                          (again[0], "sim")]
    sim, npu = points[0], points[1]
    raw = max(c["metrics"]["max_abs_diff"] for c in sim_report["cases"])
    assert sim["max_abs_diff"] == pytest.approx(raw)  # SIM's raw (garbage) diff, as stored
    assert sim["graph_max_abs_diff"] == 0.0 and sim["cases"] == 2
    assert sim["aicore_time_us"] == pytest.approx(max(c["cost_model"]["aicore_time_us"] for c in sim_report["cases"]))
    assert (npu["max_abs_diff"], npu["atol"], npu["rtol"], npu["utilization"]) == (1e-4, 1e-3, 1e-3, 0.5)
    only_sim = client.get(f"{API}/operators/scale_add/history", headers=hdr["read"], params={"mode": "sim",
                                                                                          "limit": 1}).json()
    assert [p["job_id"] for p in only_sim["points"]] == [again[0]]


@pytest.mark.parametrize(("params", "expected"), [
    ({}, 9),
    ({"verdict": "structural_error"}, 1),
    ({"verdict": ["pass", "precision_fail"]}, 4),
    ({"mode": "npu"}, 4),
    ({"operator": "scale_add"}, 4),
    ({"operator": "nobody"}, 0),
    ({"branch": "dev"}, 1),
    ({"author": "li", "mode": "sim"}, 4),
    ({"commit": "c1"}, 4),
    ({"since": "2000-01-01T00:00:00Z"}, 9),
    ({"until": "2000-01-01T00:00:00Z"}, 0),
])
def test_case_filters(client, hdr, seeded, params, expected):
    body = client.get(f"{API}/cases", headers=hdr["read"], params=params).json()
    assert len(body["items"]) == expected and body["next_cursor"] is None


def test_case_filter_by_job(client, hdr, seeded):
    body = client.get(f"{API}/cases", headers=hdr["read"], params={"job_id": seeded["broken"][0]}).json()
    [case] = body["items"]
    assert case["case"] == "missing_vec_tiles_32x64" and case["error_type"] == "RenderedParserError"
    assert case["diagnosis_rules"] == "vec-tile-shape-not-set"


def test_cursor_pagination_walks_every_case_once_newest_first(client, hdr, seeded):
    every = [c["id"] for c in client.get(f"{API}/cases", headers=hdr["read"]).json()["items"]]
    seen, cursor = [], None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get(f"{API}/cases", headers=hdr["read"], params=params).json()
        seen += [c["id"] for c in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
        assert len(page["items"]) == 2
    assert seen == every == sorted(every, reverse=True)


def test_cases_reject_unknown_verdicts(client, hdr):
    r = client.get(f"{API}/cases", headers=hdr["read"], params={"verdict": "kernel_defect"})
    assert r.status_code == 422 and "query.verdict" in r.json()["detail"]


def test_times_are_utc(client, hdr, seeded):
    case = client.get(f"{API}/cases", headers=hdr["read"], params={"limit": 1}).json()["items"][0]
    created = datetime.fromisoformat(case["created_at"].replace("Z", "+00:00"))
    assert abs(created - datetime.now(timezone.utc)) < timedelta(minutes=5)
