"""Reading ``.nsys-rep`` through ``nsys export``: with stand-in ``nsys`` scripts for each way it can
go wrong (missing, failing, hanging, too old), and with the real nsys 2022.4 where it is installed.
No case may leave its temporary export behind."""

from __future__ import annotations

import shutil
import stat
import tempfile
import time
from pathlib import Path

import pytest

from coach.errors import InputError, ToolError
from coach.ingest import load, nsys_rep

OLD_NSYS_VERSION = "NVIDIA Nsight Systems version 2022.4.2.1-df9881f"
#: A stand-in as new as the 2025.3 reports, for failures that are not about the version.
NEW_NSYS_VERSION = "NVIDIA Nsight Systems version 2025.3.2.0-36398880"


@pytest.fixture(autouse=True)
def private_tmp(tmp_path, monkeypatch):
    """Temporary files go to a folder of this test's own, checked empty afterwards."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.delenv("COACH_NSYS", raising=False)
    yield folder
    assert list(folder.iterdir()) == []


@pytest.fixture
def fake_nsys(tmp_path, monkeypatch):
    """Install a stand-in ``nsys`` whose ``export`` runs the given shell snippet; ``$out`` is the
    path passed to --output. Returns its path; PATH holds only its folder and the basic tools."""

    def _install(export_body: str, version_line: str = OLD_NSYS_VERSION) -> Path:
        bindir = tmp_path / "bin"
        bindir.mkdir(exist_ok=True)
        script = bindir / "nsys"
        script.write_text(f"""#!/bin/sh
if [ "$1" = "--version" ]; then echo "{version_line}"; exit 0; fi
out=""
while [ $# -gt 0 ]; do [ "$1" = "--output" ] && out="$2"; shift; done
{export_body}
""")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
        return script

    return _install


def test_missing_nsys_says_to_install_it_or_pass_the_sqlite(softmax_nsys_rep, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolError, match=r"install Nsight Systems .* pass the report's SQLite export") as info:
        load(softmax_nsys_rep)
    assert "recorded by Nsight Systems 2025.3.1.0" in str(info.value) and "\n" not in str(info.value)


def test_coach_nsys_must_be_executable(softmax_nsys_rep, tmp_path, monkeypatch):
    monkeypatch.setenv("COACH_NSYS", str(tmp_path / "no-such-nsys"))
    with pytest.raises(ToolError, match="COACH_NSYS=.*no-such-nsys is not an executable nsys"):
        load(softmax_nsys_rep)


def test_export_through_a_stand_in_nsys(fake_nsys, softmax_nsys_rep, softmax_nsys_sqlite):
    fake_nsys(f'cp "{softmax_nsys_sqlite}" "$out"')
    tl = load(softmax_nsys_rep)
    assert tl.kernels.height == 11 and tl.nvtx.height == 3
    assert tl.source.format == "nsys-rep" and tl.source.path == str(softmax_nsys_rep)
    assert tl.source.tool_version == "2025.3.1.0" and tl.source.meta["exported_by"].endswith("nsys")


def test_coach_nsys_wins_over_path(fake_nsys, softmax_nsys_rep, softmax_nsys_sqlite, tmp_path, monkeypatch):
    fake_nsys("exit 9")  # the one on PATH fails
    chosen = tmp_path / "chosen-nsys"
    chosen.write_text(f'#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = "--output" ] && out="$2"; shift; done\n'
                      f'cp "{softmax_nsys_sqlite}" "$out"\n')
    chosen.chmod(0o755)
    monkeypatch.setenv("COACH_NSYS", str(chosen))
    assert load(softmax_nsys_rep).kernels.height == 11


def test_failing_export_shows_its_stderr(fake_nsys, softmax_nsys_rep):
    fake_nsys('echo "progress..."; echo "first complaint" >&2; echo "Exportation error: disk full" >&2; exit 1',
              version_line=NEW_NSYS_VERSION)
    with pytest.raises(ToolError) as info:
        load(softmax_nsys_rep)
    message = str(info.value)
    assert "\n" not in message
    assert f"nsys export failed on {softmax_nsys_rep} (exit 1)" in message
    assert "first complaint | Exportation error: disk full" in message


def test_export_that_writes_nothing(fake_nsys, softmax_nsys_rep):
    fake_nsys("exit 0", version_line=NEW_NSYS_VERSION)
    with pytest.raises(ToolError, match=r"\(exit 0\): it printed nothing on stderr"):
        load(softmax_nsys_rep)


def test_unreadable_export_is_reported_against_the_report(fake_nsys, softmax_nsys_rep):
    fake_nsys('echo "not a database" > "$out"')
    with pytest.raises(InputError) as info:
        load(softmax_nsys_rep)
    assert str(info.value).startswith(f"{softmax_nsys_rep}: nsys export of it gave an unreadable SQLite file")


def test_hanging_export_is_stopped_with_its_children(fake_nsys, softmax_nsys_rep, monkeypatch):
    fake_nsys('touch "$out"; sleep 60; echo never')  # the shell waits on a child sleep
    monkeypatch.setattr(nsys_rep, "EXPORT_TIMEOUT_S", 1)
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"took longer than 1 s and was stopped"):
        load(softmax_nsys_rep)
    assert time.monotonic() - started < 10


def test_too_old_nsys_names_both_versions(fake_nsys, softmax_nsys_rep):
    # What Debian's nsys 2022.4 prints for this 2025.3 report (see test_real_nsys_2022_refuses_a_2025_report).
    fake_nsys('echo "Exportation error: Version not supported: 36398880" >&2; exit 1')
    with pytest.raises(ToolError) as info:
        load(softmax_nsys_rep)
    message = str(info.value)
    assert "\n" not in message
    assert "recorded by Nsight Systems 2025.3.1.0, which nsys 2022.4.2.1" in message
    assert "open it with Nsight Systems 2025.3.1.0 or newer" in message
    assert "pass the report's .sqlite export" in message


@pytest.mark.parametrize("complaint", [
    "Exportation error: Version number is invalid: 2025@5@1@160",
    "/build/agent/work/QuadD/Common/ProtobufUtils.cpp(60): Throw in function ... "
    "Dynamic exception type: QuadDCommon::ProtobufParseException",
    "Exportation error: something nsys never said before",
])
def test_any_failure_on_a_newer_report_says_which_version_recorded_it(fake_nsys, softmax_nsys_rep, complaint):
    """Whatever an older nsys prints, the footer's version decides: the report is newer, so say that."""
    fake_nsys(f'echo "{complaint}" >&2; exit 1')
    with pytest.raises(ToolError) as info:
        load(softmax_nsys_rep)
    message = str(info.value)
    assert "\n" not in message and complaint not in message
    assert message.startswith(f"{softmax_nsys_rep}: recorded by Nsight Systems 2025.3.1.0, which nsys 2022.4.2.1")


def test_failure_on_a_report_as_old_as_the_nsys_passes_its_words_on(fake_nsys, data_dir):
    fake_nsys('echo "Exportation error: disk full" >&2; exit 1')
    with pytest.raises(ToolError, match=r"nsys export failed on .*nvtx_cpu.nsys-rep \(exit 1\): Exportation error: disk"):
        load(data_dir / "nsys_nvtx_cpu_2022" / "nvtx_cpu.nsys-rep")


def test_the_recording_version_is_read_from_the_footer(softmax_nsys_rep, data_dir):
    assert nsys_rep.recorded_version(softmax_nsys_rep) == "2025.3.1.0"
    assert nsys_rep.recorded_version(data_dir / "nsys_nvtx_cpu_2022" / "nvtx_cpu.nsys-rep") == "2022.4.2.1-df9881f"


def test_a_version_in_the_first_line_is_read_where_there_is_no_footer(fake_nsys, tmp_path):
    """Synthetic: a report whose first line carries the version in nsys's own @-separated form."""
    rep = tmp_path / "future.nsys-rep"
    rep.write_bytes(b"NVIDIA Tegra Profiler Report 2026@2@1@77.\n" + bytes(64))
    fake_nsys('echo "Exportation error: Version number is invalid: 2026@2@1@77" >&2; exit 1')
    with pytest.raises(ToolError, match=r"recorded by Nsight Systems 2026\.2\.1\.77, which nsys 2022\.4\.2\.1"):
        load(rep)


def test_too_old_nsys_with_an_unrecognised_report_names_its_format(fake_nsys, tmp_path):
    rep = tmp_path / "future.nsys-rep"
    rep.write_bytes(b"NVIDIA Tegra Profiler Report 99999999.\n" + bytes(64))
    fake_nsys('echo "Exportation error: Version not supported: 99999999" >&2; exit 1', version_line="garbage")
    with pytest.raises(ToolError, match=r"recorded by report format 99999999, which this nsys"):
        load(rep)


def test_the_recording_version_is_the_tool_version_and_the_exporter_is_kept_apart(fake_nsys, softmax_nsys_rep,
                                                                                    softmax_nsys_sqlite):
    fake_nsys(f'cp "{softmax_nsys_sqlite}" "$out"')
    tl = load(softmax_nsys_rep)
    assert tl.source.tool_version == "2025.3.1.0"  # the footer; the export says 2025.3.2.0
    assert tl.source.meta["export_product_version"] == "2025.3.2.0"


needs_nsys = pytest.mark.nsys  # conftest: skipped without nsys, except in CI


@needs_nsys
def test_real_nsys_exports_a_report_of_its_own_version(data_dir):
    tl = load(data_dir / "nsys_nvtx_cpu_2022" / "nvtx_cpu.nsys-rep")
    assert tl.source.format == "nsys-rep" and tl.nvtx.height == 9 and tl.kernels.height == 0


@needs_nsys
def test_real_nsys_2022_refuses_a_2025_report(softmax_nsys_rep):
    if "2022.4" not in nsys_rep._nsys_version(nsys_rep.nsys_executable()):
        pytest.skip("the installed nsys is not 2022.4")
    with pytest.raises(ToolError, match=r"recorded by Nsight Systems 2025\.3\.1\.0, which nsys 2022\.4\.2\.1"):
        load(softmax_nsys_rep)


# --- .qdrep, the report suffix of nsys before 2021.4 ---------------------------------------------


@pytest.fixture
def qdrep_2021(data_dir, tmp_path):
    """Synthetic: the 2022.4 report of tests/data with its footer's version rewritten to a 2021.3 one of
    the same length and saved as .qdrep, the suffix nsys used before 2021.4. Only the version differs;
    the footer layout of a real 2021 report is not known here."""
    data = (data_dir / "nsys_nvtx_cpu_2022" / "nvtx_cpu.nsys-rep").read_bytes()
    assert data.count(b"2022.4.2.1-df9881f") >= 1
    rep = tmp_path / "old.qdrep"
    rep.write_bytes(data.replace(b"2022.4.2.1-df9881f", b"2021.3.1.5-ee9c30a"))
    return rep


def test_a_qdrep_names_the_nsys_that_recorded_it_not_the_one_that_exported_it(fake_nsys, qdrep_2021, softmax_nsys_sqlite):
    fake_nsys(f'cp "{softmax_nsys_sqlite}" "$out"')
    tl = load(qdrep_2021)
    assert tl.source.format == "nsys-rep" and tl.source.path == str(qdrep_2021)
    assert tl.source.tool_version == "2021.3.1.5-ee9c30a"  # as the footer writes it, build hash and all
    assert tl.source.meta["export_product_version"] == "2025.3.2.0"  # what the export says: the exporter


def test_a_qdrep_without_gpu_activity_says_so_in_one_line(fake_nsys, qdrep_2021, data_dir):
    """The export of a capture without --trace=cuda: the true reason, against the report the user gave,
    not "cannot concat empty list" nor "unreadable"."""
    fake_nsys(f'cp "{data_dir / "nsys_layouts_synthetic" / "no_activity.sqlite"}" "$out"')
    with pytest.raises(InputError) as info:
        load(qdrep_2021)
    message = str(info.value)
    assert "\n" not in message and message.startswith(str(qdrep_2021))
    assert "no GPU activity was recorded" in message and "--trace=cuda" in message
    assert "unreadable" not in message and "concat" not in message
