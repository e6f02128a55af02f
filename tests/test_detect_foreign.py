"""Profiles of other tools (synthetic files in their formats' shapes): one line naming the tool and the
way out, never a reader's error about a layout."""

from __future__ import annotations

import sqlite3

import pytest

from coach.errors import InputError
from coach.ingest import load


def _message(path) -> str:
    with pytest.raises(InputError) as info:
        load(path)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_nvprof_text_output(tmp_path):
    p = tmp_path / "nvprof.csv"
    p.write_text('==4242== NVPROF is profiling process 4242, command: ./a.out\n==4242== Profiling application: ./a.out\n'
                 '"Type","Time(%)","Time","Calls","Avg","Min","Max","Name"\n')
    assert "is output of nvprof" in _message(p)


def test_nvprof_database(tmp_path):
    p = tmp_path / "run.nvvp"
    con = sqlite3.connect(p)
    con.executescript("CREATE TABLE StringTable (_id_ INTEGER, value TEXT); "
                      "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, name INTEGER);")
    con.close()
    assert "is an nvprof database" in _message(p)


def test_rocprof_database(tmp_path):
    p = tmp_path / "results.db"
    con = sqlite3.connect(p)
    con.executescript("CREATE TABLE rocpd_kernel_dispatch (id INTEGER, start INTEGER, end INTEGER);")
    con.close()
    assert "ROCm profiler database" in _message(p)


def test_exports_saved_as_utf16_on_windows_read_as_the_originals(data_dir, tmp_path):
    """PowerShell's ``>`` writes UTF-16 with a byte-order mark: the same numbers must come out."""
    for original in (data_dir / "ncu_strided_copy" / "nvidia" / "raw.csv",
                     data_dir / "kineto_torch_softmax" / "torch_softmax_kineto.json"):
        copy = tmp_path / original.name
        copy.write_bytes(original.read_text().encode("utf-16"))
        a, b = load(original), load(copy)
        first = "launches" if a.kind == "kernel-profile" else "kernels"
        assert getattr(a, first).equals(getattr(b, first))


# rocprof's CSV outputs and rocprofv3's JSON: synthetic files with the header lines of the public formats
# (rocprof v1/v2 results.csv and results.stats.csv; rocprofv3 --kernel-trace kernel_trace.csv and its JSON
# output, whose top-level key is "rocprofiler-sdk-tool"); the values are made up.
ROCPROF_FILES = {
    "results.csv": ('"Index","KernelName","gpu-id","queue-id","queue-index","pid","tid","grd","wgr","lds","scr",'
                    '"vgpr","sgpr","fbar","sig","WriteSize","DispatchNs","BeginNs","EndNs","CompleteNs"\n'
                    '0,"Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1.kd",0,1,0,100,101,262144,256,4096,0,64,32,0,'
                    '0x0,4,1000,2000,48000,49000\n', "a rocprof kernel trace"),
    "results.stats.csv": ('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
                          '"Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1.kd",10,460000,46000,100.0\n',
                          "a rocprof summary of calls"),
    "kernel_trace.csv": ('"Kind","Agent_Id","Queue_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name",'
                         '"Correlation_Id","Start_Timestamp","End_Timestamp","Workgroup_Size_X","Grid_Size_X"\n'
                         '"KERNEL_DISPATCH",1,1,101,1,12,"Cijk_Alik_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1",1,2000,48000,'
                         '256,262144\n', "a rocprofv3 kernel trace"),
    "hip_api_trace.csv": ('"Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp",'
                          '"End_Timestamp"\n"HIP_RUNTIME_API","hipLaunchKernel",100,101,1,1500,1900\n',
                          "a rocprofv3 trace CSV"),
    # rocprofv2's file plugin (ROCm's rocprofiler, plugin/file): a blank line after each header
    "results_v2.csv": ('Dispatch_ID,GPU_ID,Queue_ID,PID,TID,Grid_Size,Workgroup_Size,LDS_Per_Workgroup,Scratch_Per_Workitem,'
                       'Arch_VGPR,Accum_VGPR,SGPR,Wave_Size,Kernel_Name,Start_Timestamp,End_Timestamp,Correlation_ID\n\n'
                       '1,0,1,100,101,262144,256,0,0,8,0,16,64,"helloworld(char*, char*) (.kd)",1000,2000,3\n',
                       "a rocprofv2 kernel trace"),
    "hip_api_trace_v2.csv": ('Domain,Function,Start_Timestamp,End_Timestamp,Correlation_ID\n\n'
                             'HIP_API_DOMAIN,hipLaunchKernel,1500,1900,3\n', "a rocprofv2 API trace"),
    "results.json": ('{"rocprofiler-sdk-tool": [{"metadata": {"pid": 100}, "agents": [], '
                     '"buffer_records": {"kernel_dispatch": []}}]}', "is rocprofv3 JSON output"),
}


@pytest.mark.parametrize("name", sorted(ROCPROF_FILES))
def test_rocprof_outputs_are_named_with_the_way_out(tmp_path, name):
    text, what = ROCPROF_FILES[name]
    p = tmp_path / f"synthetic_{name}"
    p.write_text(text)
    message = _message(p)
    assert what in message and "AMD ROCm" in message and "torch.profiler" in message, message
    assert str(p) in message


def test_a_csv_with_a_kernel_name_column_alone_is_not_taken_for_rocprof(tmp_path):
    p = tmp_path / "kernels.csv"
    p.write_text('"KernelName","Time"\n"k",1\n')
    assert "rocprof" not in _message(p)


def test_a_rocprof_v1_results_json_is_named_not_blamed_on_its_fields(data_dir, tmp_path):
    """tests/data/rocprof_v1_synthetic/results.json (synthetic, in rocprof v1's layout): before, the Kineto
    reader refused it for its quoted times ("ts is "100", not a number"), which is not the reason."""
    import gzip  # noqa: PLC0415
    import shutil  # noqa: PLC0415

    src = data_dir / "rocprof_v1_synthetic" / "results.json"
    message = _message(src)
    assert "is a rocprof JSON trace" in message and "'CPU HIP API'" in message and "'GPU0'" in message
    assert "torch.profiler" in message and "not a number" not in message
    packed = tmp_path / "results.json.gz"
    with src.open("rb") as fin, gzip.open(packed, "wb") as fout:
        shutil.copyfileobj(fin, fout)
    assert "is a rocprof JSON trace" in _message(packed)


def test_the_cli_refuses_a_rocprof_v1_trace_in_one_line(data_dir):
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    done = subprocess.run([sys.executable, "-m", "coach", "diagnose", str(data_dir / "rocprof_v1_synthetic" / "results.json")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1
    assert "rocprof JSON trace" in done.stderr


def test_a_pytorch_trace_is_not_taken_for_rocprof(data_dir):
    from coach.ingest.kineto import _rocprof_lanes  # noqa: PLC0415

    import gzip  # noqa: PLC0415

    for trace in sorted((data_dir / "wild_kineto").glob("*.json.gz")):
        assert _rocprof_lanes(gzip.decompress(trace.read_bytes())) == [], trace.name


@pytest.mark.parametrize(("name", "says_repz"), [("report.ncu-repz", True), ("trace.json.zst", False)])
def test_a_zstd_compressed_file_is_named_with_the_way_out(tmp_path, name, says_repz):
    """Synthetic: a zstd frame's magic number and made-up bytes. Nsight Compute 2025.4 added .ncu-repz,
    zstd-compressed reports; before, such a file was 'not a profile coach reads'."""
    p = tmp_path / name
    p.write_bytes(b"\x28\xb5\x2f\xfd" + bytes(range(64)))
    message = _message(p)
    assert "is zstd-compressed" in message and "zstd -d" in message
    assert ("Nsight Compute 2025.4" in message) == says_repz


def test_a_rocprof_v1_database_is_named(tmp_path):
    """Synthetic: the tables rocprof v1's tblextr.py writes in results.db (columns as it creates them, no rows).
    Before: 'an SQLite database but not an Nsight Systems export', true but not what it is."""
    p = tmp_path / "results.db"
    con = sqlite3.connect(p)
    con.executescript('CREATE TABLE KERN ("Index" INTEGER, "KernelName" TEXT, "BeginNs" INTEGER, "EndNs" INTEGER); '
                      'CREATE TABLE HIP ("BeginNs" INTEGER, "EndNs" INTEGER, "pid" INTEGER, "tid" INTEGER, "Name" TEXT, '
                      '"args" TEXT, "Index" INTEGER, "Data" TEXT, "__section" INTEGER, "__lane" INTEGER); '
                      'CREATE TABLE OPS ("BeginNs" INTEGER, "EndNs" INTEGER, "dev-id" INTEGER, "Name" TEXT);')
    con.close()
    message = _message(p)
    assert "is a rocprof database" in message and "HIP, KERN, OPS" in message and "torch.profiler" in message


# nsys stats output, the tables Nsight Systems computes from a report (synthetic rows, the header lines
# of the public formats): CSV of 2023 and later, quoted CSV of 2020-2022 (gpukernsum, "Time(%)",
# "Average"), the text table nsys profile --stats=true prints with its "** title (report):" line or,
# from 2024, its "[3/8] Executing 'nvtx_sum' stats report" line, and a trace table.
NSYS_STATS = {
    "kern_sum.csv": ("Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
                     '60.0,600000,10,60000.0,60000.0,59000,61000,100.0,"void k<float>(float *)"\n', "a kernel summary"),
    "gpukernsum.csv": ('"Time(%)","Total Time (ns)","Instances","Average","Minimum","Maximum","StdDev","Name"\n'
                       '"100.0","45000","1","45000.0","45000","45000","0.0","k"\n', "a kernel summary"),
    "api_sum.csv": ('"Time (%)","Total Time (ns)","Num Calls","Avg (ns)","Name"\n"100.0","9000","3","3000.0","cudaMalloc"\n',
                    "an API summary"),
    "stats.txt": ("** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n\n"
                  " Time (%)  Total Time (ns)  Instances  Avg (ns)  Name\n --------  ---------------  ---------  --------  ----\n"
                  "    100.0           45,000          1   45000.0  k\n", "cuda_gpu_kern_sum, CUDA GPU Kernel Summary"),
    "stats_2024.txt": ("[3/8] Executing 'nvtx_sum' stats report\n\n"
                       " Time (%)  Total Time (ns)  Instances  Avg (ns)  Style    Range\n"
                       " --------  ---------------  ---------  --------  -------  -----\n"
                       "    100.0        3,481,709          1  3481709.0  PushPop  step\n", "nvtx_sum, an NVTX range summary"),
    "gpu_trace.csv": ("Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Device,Stream,Name\n"
                      "1000,5000,12,1,1,1,32,1,1,0,7,k\n", "a trace table"),
}


@pytest.mark.parametrize("name", sorted(NSYS_STATS))
def test_nsys_stats_tables_are_named_with_the_report_to_pass(tmp_path, name):
    text, what = NSYS_STATS[name]
    p = tmp_path / name
    p.write_text(text)
    message = _message(p)
    assert "is output of nsys stats" in message and what in message, message
    assert ".nsys-rep" in message and "nsys export --type sqlite" in message


def test_a_rocprof_counter_csv_is_not_called_a_trace(tmp_path):
    """rocprof v1 --pmc without --timestamp: counters per dispatch and no times (the opening columns of
    Omniperf's pmc_perf.csv, ROCm/omniperf tests/workloads/Axes1/mi200; values synthetic)."""
    p = tmp_path / "pmc_perf.csv"
    p.write_text("Index,KernelName,gpu-id,queue-id,queue-index,pid,tid,grd,wgr,lds,scr,vgpr,sgpr,fbar,sig,obj,"
                 "SQ_CYCLES,SQ_BUSY_CYCLES,SQ_WAVES,TCC_HIT[0],TCP_TCC_READ_REQ_sum\n"
                 '0,"k.kd",0,0,0,1,1,1024,256,0,0,8,16,0,0x0,0x1,100,90,16,5,7\n')
    message = _message(p)
    assert "a rocprof hardware-counter CSV" in message and "torch.profiler" in message
