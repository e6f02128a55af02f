"""The system-design questions: worked answers filled from hardware/, their arithmetic, and follow-ups.

Each hand-worked check below redoes a design answer's arithmetic in Python from the hardware values
(read through ``coach.analyze.hardware``, never typed in), so a wrong expression in design.toml fails
here; the checks that need no hardware value are worked to the digit in the comments.
"""

from __future__ import annotations

import math
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from coach.analyze import hardware
from coach.errors import InputError
from coach.exercises.bank import BANK_DIR, load_bank
from coach.reference.numbers import shown

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def design():
    return {q.id: q for q in load_bank().select(topic="design")}


def _measured(gpu: str, name: str) -> float:
    """The measured ceiling as every page prints it: the shipped calibration raised to the best rate
    recorded on the GPU (``coach.analyze.hardware.measured_ceiling``)."""
    g = hardware.get(gpu)
    return hardware.measured_ceiling(g, hardware.catalog().measured[g.id], name)[0]


def test_at_least_eight_design_questions_each_with_follow_ups(design):
    assert len(design) >= 8
    for q in design.values():
        assert q.level in ("senior", "staff"), q.id
        assert len(q.follow_ups) >= 3 and all(f.endswith("?") for f in q.follow_ups), q.id
        assert q.numbers and len(q.answer.split()) >= 200, q.id  # a worked answer, not a sketch
        assert any("hardware/" in s for s in q.sources), q.id  # the tables it reads are cited


def test_every_hardware_number_is_the_table_value_and_is_shown_as_coach_numbers_prints_it(design):
    read = 0
    for q in design.values():
        text = "\n".join([q.question, q.answer, *q.follow_ups])
        assert "{" not in text and "}" not in text, q.id
        for n in q.numbers.values():
            for r in n.refs:
                want = _measured(r.gpu, r.field) if r.measured else hardware.get(r.gpu).value(r.field)
                assert r.value == want, (q.id, n.name, r)
                read += 1
            if n.is_hardware and n.unit:
                assert n.value == n.refs[0].value
                assert n.shown == shown(n.refs[0].value, n.unit) and n.shown in text, (q.id, n.name, n.shown)
    assert read >= 30


def test_no_hardware_figure_is_typed_into_a_template():
    """The raw TOML text of a design question holds no hardware value it reads, in any usual spelling:
    every such figure reaches the answer through a placeholder."""
    data = tomllib.loads((BANK_DIR / "design.toml").read_text())
    bank = {q.id: q for q in load_bank().select(topic="design")}
    for raw in data["questions"]:
        template = "\n".join([raw["question"], raw["answer"], *raw.get("follow_ups", [])])
        for n in bank[raw["id"]].numbers.values():
            for r in n.refs:
                if r.value < 100 and float(r.value).is_integer():
                    continue  # small counts (8 GPUs per board) are not figures one could tell apart
                mantissa = re.match(r"[\d.,]+", shown(r.value, n.unit if n.is_hardware else "")).group()
                for spelling in {mantissa, mantissa.rstrip("0").rstrip(".")}:
                    assert not re.search(rf"(?<![\d.]){re.escape(spelling)}(?![\d])", template), (raw["id"], r.field, spelling)


def test_design_01_serving_arithmetic(design):
    v = {k: n.value for k, n in design["design-01"].numbers.items()}
    h200 = hardware.get("h200")
    read_bw = _measured("h200", "dram_read_bandwidth_bytes_per_s")
    bf16 = _measured("h200", "bf16_tensor_matmul_flop_per_s")
    assert v["kv_token"] == 327_680  # 2 x 80 x 8 x 128 x 2
    assert v["kv_token_gpu"] == 81_920 and v["w_gpu"] == 35e9  # over TP 4
    assert v["hbm"] == h200.dram_bytes and v["bw_read"] == read_bw
    assert v["batch_bw"] == math.floor((0.020 * read_bw - 35e9) / (4608 * 81_920))
    assert v["batch_mem"] == math.floor((0.9 * h200.dram_bytes - 35e9) / (5120 * 81_920))
    assert v["batch"] == min(v["batch_bw"], v["batch_mem"])
    prefill = 2 * 70e9 * 4096 + 2 * 80 * 4096**2 * 8192  # GEMMs plus causal attention
    assert v["prefill_flops"] == pytest.approx(prefill)
    assert v["ttft_compute"] == pytest.approx(prefill / (4 * bf16))
    assert v["t_ar"] == pytest.approx(160 * (2 * 3 / 4 * 4096 * 8192 * 2) / (h200.peer_link_bytes_per_s_bidirectional / 2))
    assert v["streams"] == pytest.approx(20 * 1024 * 0.020)  # Little's law: 409.6
    assert v["decode_replicas"] == math.ceil(409.6 / v["batch"])
    assert v["prefill_pool"] == 4 * math.ceil(20 * prefill / bf16 / 0.7 / 4)
    assert v["total_gpus"] == 4 * v["decode_replicas"] + v["prefill_pool"]


def test_design_02_moe_arithmetic(design):
    v = {k: n.value for k, n in design["design-02"].numbers.items()}
    b200 = hardware.get("b200")
    n = b200.nvlink_domain_gpus
    dispatch = 4096 * 8 * 7168 * 2  # 469,762,048 bytes
    assert v["dispatch"] == dispatch and v["leaves"] == pytest.approx((n - 1) / n * dispatch)
    assert v["t_a2a"] == pytest.approx(2 * (n - 1) / n * dispatch / (b200.peer_link_bytes_per_s_bidirectional / 2))
    assert v["expert_flops"] == 4096 * 8 * 3 * 2 * 7168 * 2048
    assert v["t_expert"] == pytest.approx(v["expert_flops"] / b200.peak_bf16_tensor_flop_per_s)
    assert v["t_fp8"] == pytest.approx(0.75 * v["t_a2a"])  # FP8 dispatch, BF16 combine


def test_design_03_long_context_arithmetic(design):
    v = {k: n.value for k, n in design["design-03"].numbers.items()}
    s, h, L = 131_072, 4096, 32
    assert v["states_gpu"] == pytest.approx(16 * 6.7e9 / 8)  # 13.4 GB
    assert v["act_layer"] == 34 * s * h and v["act_full"] == 32 * 34 * s * h  # 584 GB without checkpoints
    assert v["act_cp"] == pytest.approx((2 * s * h * L + 34 * s * h) / 8)
    assert v["logits"] == s * 50_257 * 4 / 8
    assert v["attn_ratio"] == pytest.approx(6 * L * h * s / (6 * 6.7e9))  # 2.56
    assert v["total_nockpt"] < hardware.get("h200").dram_bytes  # the answer says both plans fit


def test_design_04_to_08_arithmetic(design):
    h200, b200 = hardware.get("h200"), hardware.get("b200")
    read_bw = _measured("h200", "dram_read_bandwidth_bytes_per_s")
    ridge = h200.peak_bf16_tensor_flop_per_s / h200.dram_bandwidth_bytes_per_s
    v = {k: n.value for k, n in design["design-04"].numbers.items()}
    assert v["kv_token"] == 131_072 and v["kv_step"] == 64 * 8192 * 131_072  # Llama-3-8B: 2 x 32 x 8 x 128 x 2
    assert v["ridge"] == pytest.approx(ridge) and v["splits"] == math.ceil(2 * h200.sm_count / 8)
    v = {k: n.value for k, n in design["design-05"].numbers.items()}
    assert v["gpus"] == 64 and v["bubble"] == pytest.approx(3 / 131)  # (p-1)/(m+p-1), p = 4, m = 256 / 2
    assert v["ar"] == pytest.approx(2 * 7 / 8 * 4096 * 8192 * 2)  # ring all-reduce of b x s x h in BF16 over 8
    assert v["t_dp"] == pytest.approx(2 * 1 / 2 * (70e9 / 32 * 2) / 50e9)  # 400 Gb/s = 50 GB/s per GPU
    assert v["states_zero1"] == pytest.approx(4 * 70e9 / 32 + 12 * 70e9 / 64)
    v = {k: n.value for k, n in design["design-06"].numbers.items()}
    budget = 0.9 * 8 * h200.dram_bytes - 140e9
    assert v["seqs_bf16"] == math.floor(budget / (327_680 * 32_768))
    assert v["seqs_fp8"] == math.floor(budget / (163_840 * 32_768))
    assert v["seqs_mha"] == math.floor(budget / (2 * 80 * 64 * 128 * 2 * 32_768))
    v = {k: n.value for k, n in design["design-07"].numbers.items()}
    assert v["expected"] == pytest.approx(3.3616)  # (1 - 0.8^5) / 0.2 = (1 - 0.32768) / 0.2
    t_target, t_draft = 140e9 / (8 * read_bw), 16e9 / (8 * read_bw)
    assert v["speedup"] == pytest.approx(3.3616 / (4 * t_draft + t_target) * t_target)
    assert v["batch_limit"] == pytest.approx(ridge / 5)
    v = {k: n.value for k, n in design["design-08"].numbers.items()}
    assert v["t_fp8"] == pytest.approx(v["t_bf16_tp2"]) == pytest.approx(70e9 / read_bw)
    assert v["ridge_fp8"] == pytest.approx(h200.peak_fp8_tensor_flop_per_s / h200.dram_bandwidth_bytes_per_s)
    assert v["b200_fp4"] == b200.peak_fp4_tensor_flop_per_s


def test_the_answers_follow_the_hardware_tables(tmp_path, monkeypatch):
    """Change the H200's datasheet bandwidth in a copy of hardware/: the design answers change with it."""
    root = tmp_path / "data"
    shutil.copytree(REPO / "hardware", root / "hardware")
    f = root / "hardware" / "gpus" / "h200.toml"
    f.write_text(f.read_text().replace("dram_bandwidth_bytes_per_s = { value = 4.8e12", "dram_bandwidth_bytes_per_s = { value = 5.5e12"))
    monkeypatch.setenv("COACH_DATA", str(root))
    load_bank.cache_clear()
    try:
        q = load_bank().question("design-01")
        assert q.numbers["bw"].value == 5.5e12 and "the datasheet says 5.50 TB/s" in " ".join(q.answer.split())
        assert load_bank().question("design-04").numbers["ridge"].value == pytest.approx(989.5e12 / 5.5e12)
    finally:
        load_bank.cache_clear()


def _bank_with(tmp_path, question: str) -> None:
    (tmp_path / "t.toml").write_text(
        'topic = "t"\ntitle = "T"\n[concepts.a]\nlabel = "A"\nexplain = "x"\nsynonyms = ["alpha"]\n'
        '[concepts.rf-b]\nlabel = "B"\nexplain = "x"\nsynonyms = ["beta"]\nexample = "beta"\n'
        "[[questions]]\nid = 'q'\nlevel = 'mid'\nsignals = ['a']\nred_flags = ['rf-b']\n" + question)
    load_bank.cache_clear()
    try:
        load_bank(tmp_path)
    finally:
        load_bank.cache_clear()


@pytest.mark.parametrize("question, message", [
    ("question = 'Q?'\nanswer = 'A'\nfollow_ups = 'Why?'\n", "follow_ups must be a list of questions"),
    ("question = 'Q?'\nanswer = 'A'\nfollow_ups = ['Why?', 'and then']\n", "each ending in '?'"),
    ("question = 'Q?'\nanswer = 'A'\nfollowups = ['Why?']\n", "unknown keys ['followups']"),
    ("question = 'Q?'\nanswer = 'A {x}'\n[questions.numbers]\nx = 'y * 2'\n", "unknown name 'y'"),
    ("question = 'Q?'\nanswer = 'A {x}'\n[questions.numbers]\nx = 'h200.nvlink_domain_gpus'\n", "h200.nvlink_domain_gpus is missing in hardware/"),
    ("question = 'Q?'\nanswer = 'A {x}'\n[questions.numbers]\nx = 'h200.dram_speed'\n", "h200 has no field 'dram_speed'"),
    ("question = 'Q?'\nanswer = 'A {x}'\n[questions.numbers]\nx = 'zz9.dram_bytes'\n", "unknown GPU 'zz9'"),
    ("question = 'Q?'\nanswer = 'A {x}'\n[questions.numbers]\nx = 'h200.measured.nvlink_all_reduce_bytes_per_s'\n", "hardware/measured/ has no"),
    ("question = 'Q?'\nanswer = 'A {x}'\n[questions.numbers]\nx = 1\ny = 2\n", "numbers y are neither shown nor used"),
    ("question = 'Q?'\nanswer = 'A {z}'\n[questions.numbers]\nx = 1\n", "placeholder {z} names no number"),
    ("question = 'Q?'\nanswer = 'A {x} and {'\n[questions.numbers]\nx = 1\n", "a brace that is no placeholder"),
    ("question = 'Q?'\nanswer = 'A {x}'\n[questions.numbers]\nx = '__import__(\"os\")'\n", "only numbers, names"),
])
def test_a_broken_design_question_is_one_line_naming_the_file(tmp_path, question, message):
    with pytest.raises(InputError) as err:
        _bank_with(tmp_path, question)
    assert message in str(err.value) and str(tmp_path / "t.toml") in str(err.value) and "\n" not in str(err.value)


def test_a_worked_question_renders_placeholders_formats_and_literal_braces(tmp_path):
    (tmp_path / "t.toml").write_text(
        'topic = "t"\ntitle = "T"\n[concepts.a]\nlabel = "A"\nexplain = "x"\nsynonyms = ["alpha"]\n'
        '[concepts.rf-b]\nlabel = "B"\nexplain = "x"\nsynonyms = ["beta"]\nexample = "beta"\n'
        "[[questions]]\nid = 'q'\nlevel = 'mid'\nsignals = ['a']\nred_flags = ['rf-b']\n"
        "question = 'On {hbm}?'\nanswer = 'alpha: {kv:,.0f} B, {t}, {share:.0%}, a dict {{k: v}}'\nfollow_ups = ['And {hbm}?']\n"
        "[questions.numbers]\nhbm = { value = 'h200.dram_bytes', unit = 'B' }\nkv = '2 * 80 * 8 * 128 * 2'\n"
        "t = { value = 'kv / h200.dram_bandwidth_bytes_per_s', unit = 's' }\nshare = 'kv / hbm * 1e5'\n")
    load_bank.cache_clear()
    try:
        q = load_bank(tmp_path).question("q")
    finally:
        load_bank.cache_clear()
    h200 = hardware.get("h200")
    assert q.question == f"On {shown(h200.dram_bytes, 'B')}?" == "On 141 GB?"
    assert q.answer == f"alpha: 327,680 B, {shown(327_680 / h200.dram_bandwidth_bytes_per_s, 's')}, " \
                       f"{327_680 / h200.dram_bytes * 1e5:.0%}, a dict {{k: v}}"
    assert q.follow_ups == ("And 141 GB?",)
    assert any(s.startswith("NVIDIA H200") and "datasheet" in s for s in q.sources)
