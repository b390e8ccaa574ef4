"""What each column of report.md's tables and of metrics.parquet holds, with its unit: the
report's "Columns" section."""

from __future__ import annotations

from .config import Config

# what update_rate counts, per workload (the generators' `update_rate` setting)
RATE_UNITS = {"micro": "updates per second per subscriber", "overlay-micro": "updates per second per subscriber",
              "at": "updates per second per subscriber",
              "htm": "updates per second per edge broker, spread over its vehicles' subscriptions"}
# the columns of the tables, with their units; every count is of the replayed phase (after the
# subscriptions were set up) and, in the tables, the mean over seeds
COLUMN_DOCS = {
    "update_rate": "the grid's update rate",
    "subscribers": "subscribers in the trace",
    "mode": "parametric (UPD messages) or resub (UNSUB + SUB); +rum: with the runtime update monitor",
    "matcher": "the brokers' matching index (fastint, poset or naive)",
    "throughput": "useful events (delivered and wanted by the ground truth) per second per subscriber, over the time "
                  "from the start of the replayed phase to the end of the trace or the last delivery, whichever "
                  "is later",
    "latency_p50_ms / latency_p99_ms": "milliseconds (virtual time) from an event's publication to its delivery, "
                                       "median and 99th percentile (nearest rank) over the delivered events of "
                                       "every seed together",
    "delay_ms": "update delay, milliseconds: from an update to the first delivered event that its new guard takes "
                "and its old one did not (000 §8.1 (a)); the mean over such samples of every seed, — where there were none",
    "spurious": "events that reached a subscriber and were dropped by its local filter",
    "spurious_updates": "000 §8.1 (c)'s spurious events: of those, the ones an earlier value of the subscription "
                        "admitted (it changed from Φ to Φ', and the event matches Φ, not Φ'); an update monitor's "
                        "approximation can let through events no value of the subscription ever admitted, which "
                        "only `spurious` counts",
    "missed": "events in the ground truth (the guard held at publication time, 003 §VI-A) that were not delivered",
    "false_positives": "events delivered that are not in the ground truth: the local filter judges an event with the "
                       "parameters in force when it arrives, so one the guard refused at publication is delivered if an "
                       "update made on its way admits it",
    "duplicates": "deliveries of an (event, subscription) pair beyond the first",
    "sub_messages": "SUB, UNSUB and UPD messages sent by clients and brokers over every link, counted after setup",
    "bytes": "wire bytes of those subscription messages (SUB, UNSUB, UPD), counted after setup; not event bytes",
    "utilization": "the busiest broker's share of the replayed phase spent in service (0 to 1)",
    "sub_share": "the share of a broker's service time that went to subscription changes (SUB, UNSUB, UPD)",
    "memory_bytes": "bytes a broker holds at the end of the run (a walk of its objects with sys.getsizeof): the "
                    "largest broker's in the plots, each broker's in the per-broker table",
    "sub_bytes": "in the per-broker table: the bytes of the subscription messages that broker sent (sub_messages "
                 "there: their number)",
}


# the other columns of metrics.parquet (one row per grid point, one seed): a researcher reading the
# Parquet file found no word on them
PARQUET_DOCS = {
    "point": "the grid point's id: trace, mode, matcher and -rum with the update monitor",
    "trace": "the id of the trace the point replays (workload, seed, rate, subscribers); the key of `traces/` "
             "and `truth/`",
    "workload": "the workload of the run",
    "rum": "true where the runtime update monitor (000 §6) was on",
    "seed": "the seed the trace was generated from",
    "published": "events published in the replayed phase (the trace's events)",
    "delivered": "events delivered to a subscriber's callback (rows of `deliveries/` for the point)",
    "useful": "distinct (event, subscription) deliveries that are in the ground truth",
    "wanted": "(event, subscription) pairs in the ground truth of the trace",
    "event_bytes_to_subscribers": "wire bytes of the events brokers sent to subscribers",
    "upd_sent / sub_sent / unsub_sent": "UPD, SUB and UNSUB messages the subscribers' clients sent (part of "
                                        "`sub_messages`)",
    "upd_coalesced": "parameter changes a client merged into a UPD it had not sent yet",
    "delay_samples": "updates that yielded a delay sample (the mean `delay_ms` is over these)",
    "updates": "parameter changes the trace makes",
    "span_s": "seconds of virtual time `throughput` divides by",
    "rum_approximated / rum_suppressed": "with the update monitor: variable changes sent as an approximation, "
                                         "and changes not sent at all",
    "wall_s": "wall-clock seconds the point's simulation took in its Spark task",
}


def columns_section(config: Config) -> list[str]:
    """What each column means and its unit, the update rate's per workload; then the columns only
    metrics.parquet has."""
    docs = {**COLUMN_DOCS, "update_rate": f"{COLUMN_DOCS['update_rate']}, in {RATE_UNITS[config.workload]}"}
    return (["## Columns", ""] + [f"- `{name}`: {text}." for name, text in docs.items()]
            + ["", "`metrics.parquet` has these columns too, per grid point (one seed; the tables show the mean "
               "over seeds):", ""]
            + [f"- `{name}`: {text}." for name, text in PARQUET_DOCS.items()] + [""])
