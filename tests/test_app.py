"""The dashboard without a browser: the app factory, routing, callbacks through Dash's own endpoint,
uploads and their safety, and the pure pieces the pages are built from."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from app_support import REPORT, WALKTHROUGH_ID, data_url, dispatch, strided_walkthrough, upload

from coach.app import Settings, create_app
from coach.app import format as fmt
from coach.app.app import PAGES, route
from coach.app.pages import explore, scenario
from coach.app.reports import Reports, open_shipped, shipped_traces
from coach.app.uploads import read_upload, receive, safe_name
from coach.app.walkthrough import ANSWER_STEP, STEPS, scenario_walkthroughs, side_by_side
from coach.errors import InputError
from coach.model import Source, make_timeline


@pytest.fixture(scope="module")
def walkthrough():
    return strided_walkthrough()


@pytest.fixture
def app(tmp_path, walkthrough):
    return create_app(Settings(walkthroughs=lambda: [walkthrough], traces_dir=tmp_path / "traces",
                               kernels_dir=tmp_path / "kernels", upload_limit_bytes=4 * 2**20,
                               progress_path=tmp_path / "progress.sqlite"))


def _ids(component) -> set[str]:
    found = set()
    stack = [component]
    while stack:
        c = stack.pop()
        if isinstance(c, (list, tuple)):
            stack.extend(c)
            continue
        if getattr(c, "id", None) is not None:
            found.add(c.id)
        children = getattr(c, "children", None)
        if children is not None and not isinstance(children, str):
            stack.append(children)
    return found


def test_every_id_a_callback_names_is_in_a_page(app):
    ctx = app.ctx
    present = _ids(app.layout())
    for page in PAGES:
        present |= _ids(page.layout(ctx, f"/{WALKTHROUGH_ID}" if page is scenario else "", {}))
    kernels = ctx.reports.add("k", strided_walkthrough().before)
    present |= _ids(explore.report_body(ctx, kernels))
    timeline = ctx.reports.add("t", make_timeline(Source("t.sqlite", "nsys-sqlite", "Nsight Systems")))
    present |= _ids(explore.report_body(ctx, timeline))
    named = set()
    for key, spec in app.callback_map.items():
        named |= {d["id"] for d in spec["inputs"] + spec["state"]}
        named |= {part.split(".", 1)[0] for part in key.strip(".").split("...")}
    assert named - present == set()


@pytest.mark.parametrize("path, text", [
    ("/", "Open your own report"),
    ("/explore", "Report explorer"),
    ("/ladders", "No ladder results are recorded yet"),
    ("/ladders/softmax", "No recorded ladder 'softmax'"),
    ("/hardware", "Hardware and predictions"),
    (f"/scenario/{WALKTHROUGH_ID}", "A gather that reads every 33rd float"),
    ("/scenario/nope", "No scenario 'nope'"),
    ("/nowhere", "Page not found"),
])
def test_every_page_is_reachable_by_url(app, path, text):
    out = dispatch(app, "..page.children", {"url.pathname": path, "url.search": ""})
    assert text in json.dumps(out["page"]["children"])


def test_route_splits_the_scenario_id_from_its_path():
    assert route("/scenario/scenario-01")[1] == "scenario-01"
    assert route("/hardware/")[0].PATH == "/hardware"
    assert route("/missing")[0] is None


def test_uploads_are_limited_in_the_factory_and_the_request(app):
    assert app.server.config["MAX_CONTENT_LENGTH"] > 4 * 2**20 * 4 // 3
    assert app.ctx.settings.upload_limit_bytes == 4 * 2**20


# --------------------------------------------------------------------------------------------
# Explorer callbacks
# --------------------------------------------------------------------------------------------


def test_uploading_the_ncu_report_opens_it_and_shows_its_findings(app):
    status, data = upload(app, REPORT.read_bytes(), REPORT.name)
    assert status == 200 and data["name"] == REPORT.name and app.ctx.reports.get(data["token"]) is not None
    body = json.dumps(dispatch(app, "exp-body.children", {"exp-opened.data": data}))
    assert "copy_strided" in body and "copy_coalesced" in body
    found = json.dumps(dispatch(app, "exp-findings.children", {"exp-kernel-filter.value": explore.ALL_KERNELS,
                                                               "exp-drawn.data": True, "exp-shown.data": data}))
    assert "Uncoalesced global loads: 32 sectors per request, ideal 4" in found
    assert "Nsight Compute's own rules" in found
    # the upload is deleted once read; only empty room is left in the private folder
    assert not [p for p in app.ctx.upload_dir.rglob("*") if p.is_file()]


def test_an_upload_without_the_page_s_header_is_refused(app):
    status, answer = upload(app, REPORT.read_bytes(), REPORT.name, header=False)
    assert status == 403 and answer["error"].startswith(f"{REPORT.name}: refused")
    assert not app.ctx.reports.all()


def test_findings_can_be_narrowed_to_one_kernel(app):
    report = app.ctx.reports.add(REPORT.name, strided_walkthrough().before)  # launch 0 only
    only = json.dumps(explore.findings_view(report, "k:copy_strided")[0].to_plotly_json(), default=str)
    assert "Uncoalesced global loads" in only
    other = explore.findings_view(report, "k:copy_coalesced")[0]
    assert "Uncoalesced" not in json.dumps(other.to_plotly_json(), default=str)


def test_a_trace_named_in_the_url_opens_on_load(tmp_path, walkthrough):
    traces = tmp_path / "traces" / "h200"
    traces.mkdir(parents=True)
    shutil.copyfile(REPORT, traces / REPORT.name)
    app = create_app(Settings(traces_dir=tmp_path / "traces", kernels_dir=tmp_path))
    page = json.dumps(dispatch(app, "..page.children", {"url.pathname": "/explore", "url.search": f"?trace=h200/{REPORT.name}"}))
    assert f'"value": "h200/{REPORT.name}"' in page and "copy_coalesced" in page  # drawn with the page
    # the page knows what its layout drew: its arrival does not draw the session's report over it
    assert f'"drawn": "h200/{REPORT.name}"' in page
    out = dispatch(app, "..report-store.data", {"exp-pick.value": f"h200/{REPORT.name}"}, triggered="exp-pick.value")
    assert out["report-store"]["data"] == {"token": f"trace:h200/{REPORT.name}", "name": f"h200/{REPORT.name}"}


def test_a_corrupt_upload_is_one_line_naming_the_file(app):
    status, answer = upload(app, REPORT.read_bytes()[:2000], "broken.ncu-rep")
    msg = answer["error"]
    assert status == 200 and msg.startswith("broken.ncu-rep: ") and "\n" not in msg
    assert app.ctx.upload_dir.name not in msg and str(app.ctx.upload_dir) not in msg
    assert not [p for p in app.ctx.upload_dir.rglob("*") if p.is_file()]


def test_a_file_that_is_no_profile_is_refused_by_content(app):
    status, answer = upload(app, b"#!/bin/sh\nrm -rf /\n", "report.ncu-rep")
    assert status == 200 and "is not a profile coach reads" in answer["error"]


def test_an_upload_over_the_limit_is_refused_naming_the_file(app):
    status, answer = upload(app, b"x" * (4 * 2**20 + 1), "big.sqlite")
    assert status == 200 and answer["error"].startswith("big.sqlite: is 4.19 MB, over the upload limit of 4.19 MB")


def test_a_tool_error_on_an_upload_names_the_file_not_the_server_s_copy(tmp_path, monkeypatch):
    from coach.app import uploads
    from coach.errors import ToolError

    def failing(path):
        raise ToolError(f"nsys export failed on {path} (exit 1): cannot open {path.parent}/x.sqlite")

    monkeypatch.setattr(uploads, "load", failing)
    path = uploads.receive_stream(__import__("io").BytesIO(b"data"), "run.nsys-rep", tmp_path, 2**20)
    with pytest.raises(InputError) as err:
        uploads.read_path(path, "run.nsys-rep", tmp_path)
    assert str(err.value) == "run.nsys-rep: nsys export failed on run.nsys-rep (exit 1): cannot open x.sqlite"
    assert str(tmp_path) not in str(err.value)


def test_without_a_report_the_explorer_invites_one(app):
    body = json.dumps(dispatch(app, "exp-body.children", {"exp-opened.data": {}})["exp-body"]["children"])
    assert "No report open" in body
    gone = json.dumps(dispatch(app, "exp-body.children", {"exp-opened.data": {"token": "x", "name": "a.sqlite"}}))
    assert "a.sqlite is no longer open" in gone


# --------------------------------------------------------------------------------------------
# Uploads and shipped traces
# --------------------------------------------------------------------------------------------


def test_upload_names_cannot_leave_the_upload_folder(tmp_path):
    assert safe_name("../../etc/passwd") == "passwd"
    assert safe_name("C:\\Users\\me\\run.nsys-rep") == "run.nsys-rep"
    assert safe_name("..hidden") == "hidden"
    assert safe_name("") == "uploaded_file"
    path = receive(data_url(b"x"), "../../../evil.sh", tmp_path, 10)
    assert path.parent.parent == tmp_path and path.name == "evil.sh"


def test_uploads_over_the_limit_are_refused_before_decoding(tmp_path):
    with pytest.raises(InputError, match=r"big.sqlite: is 2\.10 MB, over the upload limit of 1\.05 MB"):
        receive(data_url(b"\0" * 2_100_000), "big.sqlite", tmp_path, 2**20)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("contents, problem", [
    (None, "did not arrive as a file upload"),
    ("data:text/plain;base64,@@@@", "arrived damaged"),
    ("data:text/plain;base64,", "is empty"),
])
def test_bad_uploads_say_what_is_wrong(tmp_path, contents, problem):
    with pytest.raises(InputError, match=problem):
        read_upload(contents, "f.csv", tmp_path, 2**20)


def test_shipped_traces_are_listed_and_only_those_open(tmp_path):
    (tmp_path / "h200" / "copy").mkdir(parents=True)
    shutil.copyfile(REPORT, tmp_path / "h200" / "copy" / REPORT.name)
    (tmp_path / "h200" / "copy" / "notes.md").write_text("not a trace")
    assert [t.id for t in shipped_traces(tmp_path)] == [f"h200/copy/{REPORT.name}"]
    reports = Reports()
    opened = open_shipped(reports, tmp_path, f"h200/copy/{REPORT.name}")
    assert opened.profile.launches.height == 2
    assert open_shipped(reports, tmp_path, f"h200/copy/{REPORT.name}") is opened  # read once
    with pytest.raises(InputError, match="is not one of the traces shipped"):
        open_shipped(reports, tmp_path, "../../etc/passwd")


def test_reports_keep_the_most_recently_used(walkthrough):
    reports = Reports(capacity=2)
    a = reports.add("a", walkthrough.before)
    b = reports.add("b", walkthrough.before)
    reports.get(a.token)
    reports.add("c", walkthrough.before)
    assert reports.get(b.token) is None and reports.get(a.token) is a


# --------------------------------------------------------------------------------------------
# Scenario stepper
# --------------------------------------------------------------------------------------------


def test_the_answer_step_cannot_be_skipped():
    s = scenario.advance(None, "next")
    assert s["step"] == ANSWER_STEP
    assert scenario.advance(s, "next") == s  # no answer yet
    assert scenario.advance(s, "commit", "   ") == s  # blank is no answer
    s = scenario.advance(s, "commit", " sectors per request ")
    assert s["answer"] == "sectors per request"
    assert scenario.advance(s, "next")["step"] == ANSWER_STEP + 1
    assert scenario.advance(scenario.advance(s, "back"), "back")["step"] == 0


def test_stepper_callbacks_walk_every_step(app):
    state = {"step": 0, "answer": ""}
    seen = []
    for _ in STEPS:
        out = dispatch(app, "..scn-stepper.children", {"scn-step-store.data": state, "scn-id.data": WALKTHROUGH_ID})
        seen.append(json.dumps(out["scn-body"]["children"]))
        if state["step"] == ANSWER_STEP:
            assert out["scn-next"]["disabled"] is True and out["scn-answer-box"]["style"]["display"] == "block"
            state = dispatch(app, "..scn-step-store.data", {"scn-commit.n_clicks": 1, "scn-answer.value": "sectors",
                                                            "scn-step-store.data": state, "scn-id.data": WALKTHROUGH_ID},
                             triggered="scn-commit.n_clicks")["scn-step-store"]["data"]
        out = dispatch(app, "..scn-step-store.data", {"scn-next.n_clicks": 1, "scn-step-store.data": state,
                                                      "scn-id.data": WALKTHROUGH_ID}, triggered="scn-next.n_clicks")
        state = out["scn-step-store"]["data"]
        assert out["scn-saved"]["data"] == {WALKTHROUGH_ID: state}  # the session keeps it
    assert "stride 33" in seen[0] and "1.18 ms" in seen[0]
    assert "67,108,864" in seen[2] and "4.56 GB" in seen[2]  # sectors and DRAM bytes of copy_strided
    assert "Uncoalesced global loads" in seen[3]
    assert "copy_coalesced" in seen[4]
    assert state["step"] == len(STEPS) - 1


def test_walkthrough_numbers_come_from_the_recorded_pair(walkthrough):
    assert walkthrough.slow_time_ns == pytest.approx(1_179_872.0)
    assert walkthrough.fixed_time_ns == pytest.approx(198_080.0)
    assert walkthrough.speedup == pytest.approx(5.9565, rel=1e-4)
    assert fmt.ratio(walkthrough.speedup) == "5.96×"
    assert walkthrough.slow_rate == pytest.approx(4.5642e9 / 1.179872e-3, rel=1e-4)
    sectors = next(e for e in walkthrough.evidence if e.metric == "global_load_sectors")
    assert (sectors.slow, sectors.fixed) == (67_108_864.0, 8_388_608.0)  # 32 and 4 per request of 2,097,152


def test_side_by_side_marks_only_the_changed_lines():
    left, right = side_by_side("a\nb\nc\n", "a\nB\nc\nd\n")
    assert [(x.text, x.change) for x in left] == [("a", ""), ("b", "del"), ("c", ""), ("", "")]
    assert [(x.text, x.change) for x in right] == [("a", ""), ("B", "add"), ("c", ""), ("d", "add")]


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, unit, shown", [
    (4.28e12, "B/s", "4.28 TB/s"), (1.179872e-3, "s", "1.18 ms"), (6.79e14, "FLOP/s", "679 TFLOP/s"),
    (0.0, "B", "0 B"), (None, "B", "–"), (float("nan"), "s", "–"), (512, "B", "512 B"),
])
def test_si(value, unit, shown):
    assert fmt.si(value, unit) == shown


def test_numbers_never_show_raw_floats():
    assert fmt.number(262144.0) == "262,144"
    assert fmt.number(80.392214) == "80.4"
    assert fmt.duration_ns(198080.0) == "198 µs"
    assert fmt.pct(54.319324) == "54.3%"


# --------------------------------------------------------------------------------------------
# Scenarios from scenarios/ (their traces are not recorded yet)
# --------------------------------------------------------------------------------------------


def test_the_project_scenarios_are_listed_with_their_words(tmp_path):
    from coach.app.walkthrough import UNKNOWN, scenario_walkthroughs

    walks = {w.id: w for w in scenario_walkthroughs(traces=tmp_path)}
    w = walks["scenario-01"]
    assert w.title == "Uncoalesced global access: particles stored as an array of structs"
    assert w.bottleneck == "memory-access-pattern" and not w.recorded and w.loader is None
    # numbers from the bytes model are filled in; the ones a recording gives are not invented
    assert "402,653,184 particles" in w.symptom and f"takes {UNKNOWN} ms" in w.symptom
    assert "{" not in w.symptom and "on the ." not in w.symptom
    assert w.one_line == "A particle simulation keeps each particle as a 32-byte struct (position, velocity, mass, charge)."


def test_an_unrecorded_scenario_walks_without_numbers(tmp_path):
    app = create_app(Settings(traces_dir=tmp_path, kernels_dir=tmp_path))
    home = json.dumps(dispatch(app, "..page.children", {"url.pathname": "/", "url.search": ""}))
    assert "scenario-01" in home and "not recorded yet" in home
    page = json.dumps(dispatch(app, "..page.children", {"url.pathname": "/scenario/scenario-01", "url.search": ""}))
    assert "traces are not recorded yet" in page
    out = dispatch(app, "..scn-stepper.children", {"scn-step-store.data": {"step": 2, "answer": "x"},
                                                   "scn-id.data": "scenario-01"})
    assert "No evidence recorded" in json.dumps(out["scn-body"]["children"])
    out = dispatch(app, "..scn-stepper.children", {"scn-step-store.data": {"step": 4, "answer": "x"},
                                                   "scn-id.data": "scenario-01"})
    assert "structure of arrays" in json.dumps(out["scn-body"]["children"])


# --------------------------------------------------------------------------------------------
# Timelines in the explorer
# --------------------------------------------------------------------------------------------


def test_zooming_the_recorded_timeline_redraws_only_the_window(app, softmax_nsys_sqlite):
    from coach.ingest import load

    report = app.ctx.reports.add(softmax_nsys_sqlite.name, load(softmax_nsys_sqlite))
    data = {"token": report.token, "name": report.name}
    body = json.dumps(dispatch(app, "exp-body.children", {"exp-opened.data": data}), ensure_ascii=False)
    assert "83 events; the summary of the window shown follows" in body  # 11 kernels, 4 memcpy, 1 memset, 64 API calls, 3 NVTX ranges
    from coach.app import timeline_view

    fig = json.loads(json.dumps(timeline_view.figure(timeline_view.events(report.profile))[0].to_plotly_json(),
                                default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
    first = dispatch(app, "..exp-timeline.figure", {"exp-timeline.relayoutData": {"autosize": True},
                                                    "exp-timeline.figure": fig, "exp-shown.data": data})
    # the view opens on the GPU's working stretch: 76 of the 83 events overlap it; the others are the
    # host's start-up before the first copy
    assert "76 events; GPU 0 busy 46.8% (kernels 434 µs, memcpys 129 ms, memsets 1.15 µs)" in first["exp-timeline-note"]["children"]
    assert "exp-timeline" not in first  # nothing redrawn
    assert "cunn_SoftMaxForward" in body and "share of kernel time (%)" in body
    found = json.dumps(dispatch(app, "exp-findings.children", {"exp-kernel-filter.value": explore.ALL_KERNELS,
                                                               "exp-drawn.data": True, "exp-shown.data": data}))
    assert "3 copies through pageable memory at 1.56 GB/s" in found
    waiting = json.dumps(dispatch(app, "exp-findings.children", {"exp-kernel-filter.value": explore.ALL_KERNELS,
                                                                 "exp-drawn.data": None, "exp-shown.data": data}))
    assert "Diagnosing once the timeline is drawn" in waiting
    lo, hi = report.profile.span_ns
    mid = (lo + hi) / 2e6
    out = dispatch(app, "..exp-timeline.figure", {"exp-timeline.relayoutData": {"xaxis.range[0]": mid,
                                                                                "xaxis.range[1]": mid + 1.0},
                                                  "exp-shown.data": data})
    assert out["exp-timeline"]["figure"]["layout"]["xaxis"]["range"] == pytest.approx([mid, mid + 1.0], abs=1e-6)
    # the middle of this trace is the GPU waiting on the host: the lanes stay, and the note says how long
    assert "no GPU work here: an idle gap of 44.0 ms (4,872–4,916 ms)" in out["exp-timeline-note"]["children"]
    lanes = next(t for t in out["exp-timeline"]["figure"]["data"] if t.get("meta") == "lanes")
    assert lanes["y"] == ["NVTX · thread 608", "CUDA API · thread 608", "GPU 0 · stream 7", "GPU 0 · stream 7 · memcpy",
                          "GPU 0 · stream 7 · memset"]



@pytest.mark.parametrize("path, kernels", [
    ("ncu_strided_copy/nvidia/raw.csv", ("copy_strided", "copy_coalesced")),
    ("kineto_torch_softmax/torch_softmax_kineto.json", ("cunn_SoftMaxForward",)),
])
def test_other_formats_open_in_the_explorer(app, data_dir, path, kernels):
    file = data_dir / path
    status, data = upload(app, file.read_bytes(), file.name)
    assert status == 200, data
    body = json.dumps(dispatch(app, "exp-body.children", {"exp-opened.data": data}))
    for name in kernels:
        assert name in body


def test_the_first_page_comes_with_the_layout(app):
    client = app.server.test_client()
    layout = client.get("/_dash-layout", headers={"Referer": "http://127.0.0.1:8050/hardware?gpu=h100-sxm"}).get_data(True)
    assert "Hardware and predictions" in layout and '"value": "h100-sxm"' in layout.replace('":"', '": "')
    assert "Page not found" in client.get("/_dash-layout", headers={"Referer": "http://x/nope"}).get_data(True)
    assert "Open your own report" in client.get("/_dash-layout").get_data(True)


def test_a_broken_scenario_is_named_and_the_others_still_listed(tmp_path):
    scenarios_dir = tmp_path / "scenarios"
    shutil.copytree(Path(__file__).resolve().parents[1] / "scenarios" / "scenario-01-aos-particles",
                    scenarios_dir / "scenario-01-aos-particles")
    (scenarios_dir / "scenario-02-broken").mkdir()
    (scenarios_dir / "scenario-02-broken" / "scenario.toml").write_text("id = [unclosed")
    problems: list[str] = []
    walks = scenario_walkthroughs(scenarios_dir, tmp_path, problems=problems)
    assert [w.id for w in walks] == ["scenario-01"]
    assert len(problems) == 1 and "scenario-02-broken/scenario.toml: is not valid TOML" in problems[0]
    with pytest.raises(InputError):
        scenario_walkthroughs(scenarios_dir, tmp_path)


def test_the_recorded_pilot_scenario_comes_with_its_numbers_and_code():
    from coach.app.walkthrough import scenario_walkthroughs

    listed = {w.id: w for w in scenario_walkthroughs()}["scenario-01"]  # traces/h200/scenario-01
    assert listed.recorded and listed.before is None  # profiles are read only when it is opened
    w = listed.complete()
    from coach import recordings, scenarios

    recorded = recordings.open_recording(scenarios.find("scenario-01")).values()  # what coach run prints
    assert w.slow_time_ns == pytest.approx(recorded["slow_ms"] * 1e6, rel=1e-6)
    assert fmt.ratio(w.speedup) == fmt.ratio(recorded["speedup"]) == "2.37×"
    sectors = w.evidence[0]
    assert (sectors.label, sectors.slow, sectors.fixed, sectors.key) == ("global load sectors per request", 32.0, 4.0, True)
    assert w.before.launches["kernel_name"].to_list() == ["drift_x_aos"]
    assert w.after.launches["kernel_name"].to_list() == ["drift_x_soa"]
    assert w.slow_timeline is not None and w.fixed_timeline is not None
    assert w.source_label == "particles.cu: drift_x_aos and drift_x_soa"
    assert "p[i].x + dt * p[i].vx" in w.slow_source and "x[i] + dt * vx[i]" in w.fixed_source


def test_a_python_scenario_shows_its_two_variant_functions():
    from coach.app.walkthrough import variant_sources

    folder = Path(__file__).resolve().parents[1] / "scenarios" / "scenario-15-pageable-copies"
    slow, fixed, label = variant_sources(folder, None, None)
    assert label == "feed.py: epoch_slow and epoch_fixed"
    assert slow.startswith("def epoch_slow() -> None:") and ".to(\"cuda\")" in slow and "def epoch_fixed" not in slow
    assert fixed.startswith("def epoch_fixed() -> None:") and "prefetch(k + 1)" in fixed


# --------------------------------------------------------------------------------------------
# Exercises: the rubric grades the first check; the gallery shows the user's progress
# --------------------------------------------------------------------------------------------

ANSWER = ("Sectors per request of the global loads, expecting 4 for coalesced 4-byte loads; "
          "compare DRAM bytes read with the useful bytes.")


def test_the_committed_answer_is_graded_against_the_scenario_rubric(tmp_path):
    app = create_app(Settings(kernels_dir=tmp_path, progress_path=tmp_path / "progress.sqlite"))
    out = dispatch(app, "..scn-stepper.children", {"scn-step-store.data": {"step": ANSWER_STEP, "answer": ANSWER},
                                                   "scn-id.data": "scenario-01"})
    body = json.dumps(out["scn-body"]["children"])
    assert "Against the rubric: 3 of 4" in body
    assert "missing: Estimates the floor from bytes over bandwidth" in body
    assert "coach exercise scenario-01" in body


def test_the_gallery_shows_each_exercise_best_score(tmp_path):
    from coach.exercises.progress import Attempt, save

    db = tmp_path / "progress.sqlite"
    save([Attempt(kind="exercise", item="scenario-01", topic="memory", score=3, max_score=4),
          Attempt(kind="exercise", item="scenario-01", topic="memory", score=1, max_score=4)], db)
    app = create_app(Settings(kernels_dir=tmp_path, progress_path=db))
    home = json.dumps(dispatch(app, "..page.children", {"url.pathname": "/", "url.search": ""}))
    assert "exercise: best 75%, 2 tries" in home
    assert "exercise not tried" in home  # scenario-15


def test_reading_progress_never_creates_the_database(tmp_path):
    from coach.app import analysis

    assert analysis.exercise_status(tmp_path / "none.sqlite") == {}
    assert not (tmp_path / "none.sqlite").exists()
