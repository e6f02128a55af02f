"""Rung 09 of the attention ladder chooses its configuration per shape on the first call: on the CPU,
with the kernel launch and CUDA's events replaced by a fake clock (the Gluon kernel itself runs on
the GPU only), the choice is the lowest median, a candidate that fails or disagrees with the first is
dropped with its reason, the choice is logged and cached per shape, and the SASS reader finds the
variant the launch ran."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton.experimental.gluon")

from coach.capture import ladder as runner  # noqa: E402
from coach.capture import sass  # noqa: E402
from coach.ladders import load_definition  # noqa: E402

DEFN = load_definition("attention")


class Clock:
    """CUDA events on a fake clock that each fake launch advances by its candidate's duration."""

    def __init__(self):
        self.now = 0.0

    def event(self, **_):
        clock = self

        class Event:
            def record(self):
                self.t = clock.now

            def synchronize(self):
                pass

            def elapsed_time(self, end):
                return end.t - self.t

        return Event()


@pytest.fixture()
def rung(monkeypatch):
    module = runner._import_file(DEFN.path(DEFN.rung("09")), "coach_test_attention_09")
    clock = Clock()
    monkeypatch.setattr(torch.cuda, "Event", clock.event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    module.clock = clock
    return module


def _inputs(head_dim=64, causal=0):
    q = torch.zeros(1, 2, 256, head_dim, dtype=torch.bfloat16)
    return {"q": q, "k": q, "v": q, "causal": causal}, {"o": torch.empty_like(q)}


class Compiled:
    class metadata:  # a two-group kernel: 4 warps per consumer group, the producer's padded to 4
        num_warps, num_stages = 12, 3


def _fake_run(rung, times_ms, wrong=(), broken=()):
    """rung.run's stand-in: a candidate's output is ones (or twos when ``wrong``), its launch costs
    its time on the fake clock; a ``broken`` one raises as a failed compile would."""
    launched = []

    def run(inp, out, config):
        launched.append(config)
        if config in broken:
            raise RuntimeError("out of resources: shared memory\nmore")
        out["o"].fill_(2.0 if config in wrong else 1.0)
        rung.clock.now += times_ms[config]
        return Compiled()

    return run, launched


def test_the_fastest_candidate_is_chosen_logged_and_kept_for_the_shape(rung, monkeypatch, capsys):
    cands = rung.CANDIDATES[(64, False)]
    times = {c: 1.0 + 0.1 * i for i, c in enumerate(c for cs in rung.CANDIDATES.values() for c in cs)}
    times[cands[2]] = 0.7
    run, launched = _fake_run(rung, times)
    monkeypatch.setattr(rung, "run", run)
    inp, out = _inputs()
    rung.launch(None, inp, out)
    err = capsys.readouterr().err
    assert f"chose {rung.describe(cands[2])}" in err and "B1 H2 S256 D64:" in err
    assert "700.0 us" in err, "each candidate's median is logged"
    assert launched[-1] == cands[2], "the last launch, whose output the check reads, is the chosen one's"
    assert len(launched) == len(cands) + rung.ROUNDS * rung.LAUNCHES * len(cands) + 1
    launched.clear()
    rung.launch(None, inp, out)
    assert launched == [cands[2]] and capsys.readouterr().err == "", "chosen once per shape"
    _, out_causal = _inputs(causal=1)
    rung.launch(None, _inputs(causal=1)[0], out_causal)
    assert "D64 causal: chose" in capsys.readouterr().err, "causal is another shape"


def test_a_failing_or_disagreeing_candidate_is_dropped_with_its_reason(rung, monkeypatch, capsys):
    cands = rung.CANDIDATES[(64, True)]
    times = {c: 1.0 for c in cands}
    times[cands[1]], times[cands[2]] = 0.1, 0.2  # the fastest two are broken and wrong
    run, _ = _fake_run(rung, times, wrong={cands[2]}, broken={cands[1]})
    monkeypatch.setattr(rung, "run", run)
    inp, out = _inputs(causal=1)
    rung.launch(None, inp, out)
    err = capsys.readouterr().err
    assert f"{rung.describe(cands[1])}: dropped, RuntimeError: out of resources: shared memory" in err
    assert f"{rung.describe(cands[2])}: dropped, differs from the first candidate by 1" in err
    assert rung.attention09_tuned.chosen[(1, 2, 256, 64, True)] == cands[0]
    assert bool((out["o"] == 1.0).all())


def test_no_candidate_that_runs_is_an_error_naming_why(rung, monkeypatch):
    cands = rung.CANDIDATES[(128, False)]
    run, _ = _fake_run(rung, {c: 1.0 for c in cands}, broken=set(cands))
    monkeypatch.setattr(rung, "run", run)
    with pytest.raises(RuntimeError, match="no candidate configuration ran: .*out of resources"):
        rung.launch(None, *_inputs(head_dim=128))


def test_a_single_candidate_is_not_timed(rung, monkeypatch, capsys):
    cands = rung.CANDIDATES[(128, True)]
    assert cands == [(2, 128, 2, False, False)], "D128 keeps rung 08's configuration"
    run, launched = _fake_run(rung, {c: 1.0 for c in cands})
    monkeypatch.setattr(rung, "run", run)
    rung.launch(None, *_inputs(head_dim=128, causal=1))
    assert launched == cands * 2 and "(the only one)" in capsys.readouterr().err


class Variant:
    """A compiled variant as Triton 3.6 keeps it: constexprs keyed by argument index, warps counted
    over every partition."""

    def __init__(self, rung, config, inp, num_warps):
        names = rung._kernel.arg_names
        consts = rung.constexprs(inp, config)
        self.src = type("Src", (), {"fn": type("Fn", (), {"arg_names": names}),
                                    "constants": {(names.index(k),): v for k, v in consts.items()}})
        self.metadata = type("Meta", (), {"num_warps": num_warps, "num_stages": 3})


def test_the_sass_reader_finds_the_kernel_and_the_chosen_configuration(rung, monkeypatch):
    cands = rung.CANDIDATES[(64, False)]
    run, _ = _fake_run(rung, {c: 1.0 + 0.1 * i for i, c in enumerate(cands)})
    monkeypatch.setattr(rung, "run", run)
    inp, out = _inputs()
    rung.launch(None, inp, out)
    jit, tuner = sass._unwrap(rung.attention09_tuned)
    assert jit is rung._kernel and tuner is rung.attention09_tuned
    variants = [Variant(rung, c, inp, 12 if c[0] == 2 else 16) for c in cands]
    assert sass._chosen("attention09_tuned", variants, tuner) is variants[0], "the chosen one of several variants"
    assert "attention09_tuned" in runner.triton_kernel_names(DEFN.path(DEFN.rung("09")).read_text())


def test_the_environment_can_limit_the_candidates_to_two_groups(rung, monkeypatch, capsys):
    monkeypatch.setenv(rung.GROUPS_VARIABLE, "2")
    cands = rung.CANDIDATES[(64, False)]
    run, launched = _fake_run(rung, {c: 1.0 for c in cands})
    monkeypatch.setattr(rung, "run", run)
    rung.launch(None, *_inputs())
    assert {c[0] for c in launched} == {2} and f"{rung.GROUPS_VARIABLE}=2: 1 candidates" in capsys.readouterr().err
