"""What a record's evaluation must look like once it has left as OpenTelemetry: written
out here from the convention and the record, not from ``report.otel``, so the tests
check the emitter against the rule rather than against itself."""

from __future__ import annotations

GRANULARITIES = ("file", "symbol", "span", "line")


def expected_events(record: dict, session_id: str | None, label: str | None = None) -> dict:
    """metric name -> the attributes its ``gen_ai.evaluation.result`` event must carry
    (the explanation is checked apart: it is prose)."""
    out = {}
    final, traj = record["final"], record["trajectory"]
    values = {}
    for g in GRANULARITIES:
        values[f"contextbench.{g}.coverage"] = final[g]["coverage"]
        values[f"contextbench.{g}.precision"] = final[g]["precision"]
    for g in GRANULARITIES:
        values[f"contextbench.{g}.auc_coverage"] = traj["auc_coverage"][g]
        values[f"contextbench.{g}.redundancy"] = traj["redundancy"][g]
    if "editloc" in record:
        values["contextbench.editloc.recall"] = record["editloc"]["recall"]
        values["contextbench.editloc.precision"] = record["editloc"]["precision"]
    for name, value in values.items():
        attrs = {"gen_ai.evaluation.name": name, "gen_ai.evaluation.score.value": float(value),
                 "streameval.instance_id": record["instance_id"],
                 "streameval.run_id": record["run_id"]}
        if session_id:
            attrs["gen_ai.conversation.id"] = session_id
        if label:
            attrs["gen_ai.evaluation.score.label"] = label
        out[name] = attrs
    return out


def expected_span_attributes(record: dict, session_id: str | None) -> dict:
    attrs = {f"streameval.{k}": record[k] for k in
             ("instance_id", "run_id", "trace", "agent", "model", "format", "grammars",
              "num_steps", "cost_usd", "end_reason") if record.get(k) is not None}
    attrs.update({f"streameval.tokens.{k}": v for k, v in record["tokens"].items()})
    attrs["streameval.final"] = True
    if session_id:
        attrs["gen_ai.conversation.id"] = attrs["session.id"] = session_id
    return attrs
