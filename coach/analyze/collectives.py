"""What collective communication costs: bytes each GPU sends, and the floor time over its link.

The cost model is the one NCCL's own benchmarks report ("bus bandwidth"): a GPU's link carries data
in both directions at once, each direction at half the bidirectional figure a datasheet prints, and
an algorithm's time is the bytes one GPU must push out in one direction over that rate.

``ring all-reduce`` of S bytes over n GPUs: a reduce-scatter then an all-gather, each moving
    (n-1)/n x S out of every GPU, so 2(n-1)/n x S in all. Any bandwidth-optimal all-reduce sends at
    least that; NCCL's bus bandwidth is S / t x 2(n-1)/n for this reason.
``all-gather`` / ``reduce-scatter`` of S bytes (the full, gathered size): (n-1)/n x S each.
``all-to-all`` where every GPU holds S bytes spread evenly over the n GPUs: (n-1)/n x S leaves it.

The floor assumes every GPU reaches every other at its full link bandwidth, which holds through
NVLink switches (HGX boards from A100 on, NVL72 racks), and ignores latency (microseconds per step:
it matters only for messages of a few MB or less). A real collective reaches some fraction of it.
Link bandwidth comes from the hardware tables with its source.
"""

from __future__ import annotations

from dataclasses import dataclass

from coach.analyze import hardware
from coach.errors import CoachError

#: NVLink-switch systems (HGX A100 and later, NVL72 racks) give each GPU 12 or more links into the
#: switches; a GPU with fewer (the V100's 6, in a hybrid cube-mesh) or without a switch does not get
#: its full bandwidth to every peer, so the floor above would not hold for it.
MIN_SWITCHED_LINKS = 12


class CollectiveError(CoachError):
    """A collective that cannot be costed (no link bandwidth, fewer than two GPUs)."""


@dataclass(frozen=True)
class Link:
    """One GPU's link into the fabric: bytes per second in each direction, and where that comes from."""

    gpu: str
    bytes_per_s_per_direction: float
    bidirectional: float
    source: str  # the table's reference for the bidirectional figure
    domain_gpus: int | None  # GPUs one NVLink switch fabric joins, where the tables say
    domain_source: str = ""


def link(gpu_id: str) -> Link:
    """The NVLink of ``gpu_id``: half the bidirectional figure in each direction."""
    gpu = hardware.get(gpu_id)
    bidir = gpu.peer_link_bytes_per_s_bidirectional
    if not bidir:
        raise CollectiveError(f"{gpu.name} has no peer-link bandwidth in the hardware tables "
                              f"({gpu.source('peer_link_bytes_per_s_bidirectional').describe()})")
    dom = gpu.nvlink_domain_gpus
    return Link(gpu.id, bidir / 2, bidir, gpu.source("peer_link_bytes_per_s_bidirectional").describe(), dom,
                gpu.source("nvlink_domain_gpus").describe() if dom else "")


def switched(gpu_id: str) -> bool:
    """Whether ``gpu_id`` sits on NVLink switches, so that it reaches every peer at full bandwidth."""
    gpu = hardware.get(gpu_id)
    if gpu.vendor != "NVIDIA" or not gpu.peer_link_bytes_per_s_bidirectional:
        return False
    return bool(gpu.nvlink_domain_gpus) or (gpu.peer_link_count or 0) >= MIN_SWITCHED_LINKS


def _check(n: int) -> None:
    if n < 2:
        raise CollectiveError(f"a collective needs at least 2 GPUs, not {n}")


def ring_allreduce_bytes(size_bytes: float, n: int) -> float:
    """Bytes each GPU sends in one direction to all-reduce ``size_bytes`` over ``n`` GPUs."""
    _check(n)
    return 2 * (n - 1) / n * size_bytes


def allgather_bytes(size_bytes: float, n: int) -> float:
    """Bytes each GPU sends to all-gather (or reduce-scatter) a tensor of ``size_bytes`` in all."""
    _check(n)
    return (n - 1) / n * size_bytes


def all_to_all_bytes(per_gpu_bytes: float, n: int) -> float:
    """Bytes that leave each GPU when it spreads ``per_gpu_bytes`` evenly over ``n`` GPUs."""
    _check(n)
    return (n - 1) / n * per_gpu_bytes


def seconds(sent_bytes: float, lnk: Link) -> float:
    """The floor time to push ``sent_bytes`` out of one GPU over its link."""
    return sent_bytes / lnk.bytes_per_s_per_direction
