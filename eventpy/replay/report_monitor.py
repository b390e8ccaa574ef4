"""The report's section on the runtime update monitor (000 §8.12, Fig. 30): each mode with the
monitor against the same mode without it, and why the run differs from the paper where it does."""

from __future__ import annotations

import math

from .config import Config
from .report import SATURATED, fmt

# 000 §8.12 / §1.5: with the monitor, throughput up to +92% (EventJava, 30% HF updates), and
# spurious events at most 27% higher.
PAPER_MONITOR = {"throughput": 0.92, "spurious": 0.27}


def monitor_section(config: Config, avg: list[dict]) -> list[str]:
    """Each mode with the update monitor against the same mode without it (000 §8.12, Fig. 30)."""
    lines = ["", "## The runtime update monitor (000 §8.12)", "",
             "Change with the monitor against the same mode without it, per grid point: throughput "
             "and spurious events as relative change, update delay as a ratio (without / with). "
             f"The paper: throughput up to +{PAPER_MONITOR['throughput']:.0%}, spurious events at most "
             f"+{PAPER_MONITOR['spurious']:.0%}, lower delay.", "",
             "| mode | matcher | updates/s | subscribers | throughput | delay without / with | spurious | "
             "spurious of updates (§8.1 (c)) | sub messages | approximations | changes sent as nothing |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    index = {(r["update_rate"], r["subscribers"], r["mode"], r["matcher"]): r for r in avg}
    for (rate, n, label, matcher), on in sorted(index.items()):
        if not label.endswith("+rum"):
            continue
        off = index.get((rate, n, label[:-4], matcher))
        if off is None:
            continue
        lines.append(f"| {label[:-4]} | {matcher} | {rate:g} | {n} | {_change(on['throughput'], off['throughput'])} | "
                     f"{fmt(off['delay_ms'] / on['delay_ms'] if on['delay_ms'] else float('nan'))}× | "
                     f"{_change(on['spurious'], off['spurious'])} | "
                     f"{_paper_spurious(on, off)} | "
                     f"{_change(on['sub_messages'], off['sub_messages'])} | "
                     f"{fmt(on['rum_approximated'])} | {fmt(on['rum_suppressed'])} |")
    return lines + ["", "### Where it differs from the paper, and why", ""] + explain_monitor(config, index)


def explain_monitor(config: Config, index: dict) -> list[str]:
    """Computed from the run at the largest subscriber count: was the baseline thrashing, and
    where the monitor's spurious events come from."""
    top = max(config.subscribers)
    out = []
    for (rate, n, label, matcher), on in sorted(index.items()):
        off = index.get((rate, n, label[:-4], matcher))
        if n != top or not label.endswith("+rum") or off is None:
            continue
        head = f"- {label[:-4]}, {matcher}, {rate:g} updates/s, {n} subscribers:"
        busy_off, busy_on = off["utilization"], on["utilization"]
        if busy_off < SATURATED:
            out.append(f"{head} the busiest broker was {busy_off:.0%} busy without the monitor and {busy_on:.0%} "
                       f"with it; throughput {_change(on['throughput'], off['throughput'])} and an update delay of "
                       f"{fmt(on['delay_ms'])} ms against {fmt(off['delay_ms'])} ms. The paper's gains come from "
                       "brokers that thrash without the monitor (000 §8.12), which these, below saturation, do not.")
        elif busy_on >= SATURATED:  # "brought it to 99%, hence throughput +31%" was said of 99% -> 99%
            out.append(f"{head} the busiest broker was {busy_off:.0%} busy without the monitor (saturated: "
                       f"thrashing, 000 §8.12) and still {busy_on:.0%} with its "
                       f"{_change(on['sub_messages'], off['sub_messages'])} subscription messages; throughput "
                       f"{_change(on['throughput'], off['throughput'])} and an update delay of "
                       f"{fmt(on['delay_ms'])} ms against {fmt(off['delay_ms'])} ms, with the brokers saturated "
                       "either way.")
        else:
            out.append(f"{head} without the monitor the busiest broker was {busy_off:.0%} busy (saturated: "
                       f"thrashing, 000 §8.12); the monitor's {_change(on['sub_messages'], off['sub_messages'])} "
                       f"subscription messages brought it to {busy_on:.0%}, hence throughput "
                       f"{_change(on['throughput'], off['throughput'])} and an update delay of "
                       f"{fmt(on['delay_ms'])} ms against {fmt(off['delay_ms'])} ms.")
        extra = on["spurious"] - off["spurious"]
        if on["rum_approximated"] and extra > 0:
            per_useful = off["spurious"] / off["useful"] if off.get("useful") else float("nan")
            out.append(f"{head} {fmt(extra)} more spurious events with the monitor, {extra / on['rum_approximated']:.2g} "
                       f"per approximation sent: an approximation is wider than the exact subscription until the "
                       "parameter catches up (a trend extrapolated one window ahead, or the whole swing of an "
                       f"oscillation). Without the monitor there were {fmt(off['spurious'])} spurious events "
                       f"({per_useful:.1%} of the useful ones): the paper's +{PAPER_MONITOR['spurious']:.0%} is "
                       "relative to a baseline whose edge brokers applied updates late and delivered many "
                       "spurious events of their own.")
        su_on, su_off = on.get("spurious_updates", math.nan), off.get("spurious_updates", math.nan)
        if not (math.isnan(su_on) or math.isnan(su_off)):
            # with none without the monitor there is no relative change to set against the paper's
            # bound: "beyond" was said for 0 -> 0 too
            if not su_off:
                bound = (f"no change to set against the paper's +{PAPER_MONITOR['spurious']:.0%}, since there "
                         "were none without the monitor.")
            else:
                side = "within" if (su_on - su_off) / su_off <= PAPER_MONITOR["spurious"] else "beyond"
                bound = f"{side} the paper's +{PAPER_MONITOR['spurious']:.0%}."
            out.append(f"{head} counted as 000 §8.1 (c) counts them (events an earlier value of the subscription "
                       f"admitted), spurious events went from {fmt(su_off)} to {fmt(su_on)} "
                       f"({_change(su_on, su_off)}): {bound}")
    return out


def _paper_spurious(on: dict, off: dict) -> str:
    """The change of 000 §8.1 (c)'s spurious events; — for a run that did not count them."""
    su_on, su_off = on.get("spurious_updates", math.nan), off.get("spurious_updates", math.nan)
    return "—" if math.isnan(su_on) or math.isnan(su_off) else _change(su_on, su_off)


def _change(new: float, old: float) -> str:
    if not old or math.isnan(old) or math.isnan(new):
        return "—" if not new else "new"
    return f"{(new - old) / old:+.0%}"
