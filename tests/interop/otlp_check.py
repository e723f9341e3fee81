"""Check a `triage probe --otlp FILE` export with OpenTelemetry's own protobuf definitions.

Usage: otlp_check.py OTLP_FILE PROBE_REPORT_JSON

OTLP_FILE holds one export request per line (ExportMetricsServiceRequest, then
ExportTraceServiceRequest lines). Each line is parsed with google.protobuf.json_format.Parse
into the message of the official `opentelemetry-proto` package, unknown field names refused (a
misspelt key fails). What that parser accepts but OTLP/JSON forbids is checked on the raw
JSON first: keys in lowerCamelCase, enums as integers, 64-bit integers as strings. OTLP/JSON writes trace and span ids as hex where proto3's
JSON mapping has base64, so those fields are checked as lowercase hex of the right length and
turned into base64 before parsing, as OTLP receivers do.

Against PROBE_REPORT_JSON (`--format json`, triage.probe/v1): one span per request, trace ids
equal to the records' `trace_id`, kind CLIENT, status ERROR exactly for failed requests; the
four GenAI client metrics with the semantic conventions' bucket boundaries and attributes.
Prints a one-line JSON summary; exits non-zero with the reason on any mismatch.
"""

import base64
import json
import re
import sys

from google.protobuf import json_format
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

DURATION_BOUNDS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
TOKEN_BOUNDS = [float(4**i) for i in range(14)]
METRICS = {
    "gen_ai.client.operation.duration": ("s", DURATION_BOUNDS),
    "gen_ai.client.operation.time_to_first_chunk": ("s", DURATION_BOUNDS),
    "gen_ai.client.operation.time_per_output_chunk": ("s", DURATION_BOUNDS),
    "gen_ai.client.token.usage": ("{token}", TOKEN_BOUNDS),
}
COMMON = {"gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "server.address", "server.port"}
SCHEMA_URL = "https://opentelemetry.io/schemas/1.41.0"
MAX_EVENTS = 64
ID_LENGTHS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}


def fail(why):
    print(f"otlp_check: {why}", file=sys.stderr)
    sys.exit(1)


def hex_ids_to_base64(node):
    """OTLP/JSON's hex ids, checked, as proto3 JSON's base64."""
    if isinstance(node, list):
        for v in node:
            hex_ids_to_base64(v)
    elif isinstance(node, dict):
        for k, v in node.items():
            if k in ID_LENGTHS and isinstance(v, str):
                if not re.fullmatch(f"[0-9a-f]{{{ID_LENGTHS[k]}}}", v) or set(v) == {"0"}:
                    fail(f"{k} {v!r} is not {ID_LENGTHS[k]} lowercase hex digits, not all zero")
                node[k] = base64.b64encode(bytes.fromhex(v)).decode()
            else:
                hex_ids_to_base64(v)


INT64_FIELDS = {"startTimeUnixNano", "timeUnixNano", "endTimeUnixNano", "count", "bucketCounts", "intValue"}
ENUM_FIELDS = {"kind", "code", "aggregationTemporality"}


def otlp_json_rules(node, path="$"):
    """What proto3's JSON parser lets through but OTLP/JSON forbids or we promise: keys in
    lowerCamelCase, enums as integers, 64-bit integers as decimal strings."""
    if isinstance(node, list):
        for i, v in enumerate(node):
            otlp_json_rules(v, f"{path}[{i}]")
    elif isinstance(node, dict):
        for k, v in node.items():
            at = f"{path}.{k}"
            if not re.fullmatch("[a-z][a-zA-Z0-9]*", k):
                fail(f"{at}: the key is not lowerCamelCase")
            if k in ENUM_FIELDS and (not isinstance(v, int) or isinstance(v, bool)):
                fail(f"{at}: an enum must be an integer, got {v!r}")
            if k in INT64_FIELDS:
                for x in v if isinstance(v, list) else [v]:
                    if not (isinstance(x, str) and re.fullmatch("0|[1-9][0-9]*", x)):
                        fail(f"{at}: a 64-bit integer must be a decimal string, got {x!r}")
            otlp_json_rules(v, at)


def attrs(kvs):
    return {kv.key: kv.value for kv in kvs}


def main():
    otlp_file, report_file = sys.argv[1], sys.argv[2]
    with open(report_file, encoding="utf-8") as f:
        records = json.load(f)["requests"]
    metrics_reqs, trace_reqs = [], []
    with open(otlp_file, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            raw = json.loads(line)
            otlp_json_rules(raw)
            hex_ids_to_base64(raw)
            text = json.dumps(raw)
            try:
                if "resourceMetrics" in raw:
                    metrics_reqs.append(json_format.Parse(text, metrics_service_pb2.ExportMetricsServiceRequest()))
                elif "resourceSpans" in raw:
                    trace_reqs.append(json_format.Parse(text, trace_service_pb2.ExportTraceServiceRequest()))
                else:
                    fail(f"line {n}: neither metrics nor traces: {sorted(raw)}")
            except json_format.ParseError as e:
                fail(f"line {n}: {e}")
    if len(metrics_reqs) != 1 or not trace_reqs:
        fail(f"{len(metrics_reqs)} metrics and {len(trace_reqs)} trace requests: expected 1 and at least 1")

    # Metrics.
    seen = {}
    for rm in metrics_reqs[0].resource_metrics:
        if rm.schema_url != SCHEMA_URL:
            fail(f"resource schemaUrl {rm.schema_url!r}")
        for sm in rm.scope_metrics:
            if sm.schema_url != SCHEMA_URL:
                fail(f"scope schemaUrl {sm.schema_url!r}")
            for m in sm.metrics:
                if m.name not in METRICS:
                    fail(f"unexpected metric {m.name}")
                unit, bounds = METRICS[m.name]
                if m.unit != unit or m.WhichOneof("data") != "histogram":
                    fail(f"{m.name}: unit {m.unit!r}, data {m.WhichOneof('data')}")
                if m.histogram.aggregation_temporality != 2:
                    fail(f"{m.name}: not cumulative")
                for p in m.histogram.data_points:
                    if list(p.explicit_bounds) != bounds:
                        fail(f"{m.name}: bounds {list(p.explicit_bounds)}")
                    if len(p.bucket_counts) != len(bounds) + 1 or sum(p.bucket_counts) != p.count or p.count == 0:
                        fail(f"{m.name}: bucket counts {list(p.bucket_counts)} for count {p.count}")
                    if not (p.start_time_unix_nano <= p.time_unix_nano and p.start_time_unix_nano > 1_600_000_000 * 10**9):
                        fail(f"{m.name}: times {p.start_time_unix_nano}..{p.time_unix_nano}")
                    keys = set(attrs(p.attributes))
                    if not COMMON <= keys:
                        fail(f"{m.name}: attributes {sorted(keys)} lack {sorted(COMMON - keys)}")
                    if m.name == "gen_ai.client.token.usage" and "gen_ai.token.type" not in keys:
                        fail(f"{m.name}: no gen_ai.token.type")
                    if "error.type" in keys and m.name != "gen_ai.client.operation.duration":
                        fail(f"{m.name}: error.type")
                    seen.setdefault(m.name, 0)
                    seen[m.name] += p.count
    if seen.get("gen_ai.client.operation.duration") != len(records):
        fail(f"operation.duration counts {seen.get('gen_ai.client.operation.duration')} of {len(records)} requests")
    if any(r["ok"] for r in records) and set(seen) != set(METRICS):
        fail(f"metrics {sorted(seen)}: expected {sorted(METRICS)}")

    # Spans.
    spans = [s for t in trace_reqs for rs in t.resource_spans for ss in rs.scope_spans for s in ss.spans]
    if len(spans) != len(records):
        fail(f"{len(spans)} spans for {len(records)} requests")
    by_index = {}
    for s in spans:
        a = attrs(s.attributes)
        if s.kind != trace_pb2.Span.SPAN_KIND_CLIENT:
            fail(f"span kind {s.kind}")
        if not (0 < s.start_time_unix_nano <= s.end_time_unix_nano):
            fail(f"span times {s.start_time_unix_nano}..{s.end_time_unix_nano}")
        if len(s.events) > MAX_EVENTS:
            fail(f"{len(s.events)} events on one span")
        if not COMMON <= set(a):
            fail(f"span attributes {sorted(a)} lack {sorted(COMMON - set(a))}")
        by_index[a["triage.request.index"].int_value] = s
    errors = 0
    for r in records:
        s = by_index.get(r["index"])
        if s is None:
            fail(f"no span for request {r['index']}")
        if r.get("trace_id") and s.trace_id.hex() != r["trace_id"]:
            fail(f"request {r['index']}: span trace id {s.trace_id.hex()} != record {r['trace_id']}")
        is_error = s.status.code == trace_pb2.Status.STATUS_CODE_ERROR
        if is_error == r["ok"]:
            fail(f"request {r['index']}: ok {r['ok']} but status {s.status.code}")
        errors += is_error
        if r["ok"] and (not s.events or s.events[0].name != "triage.first_token"):
            fail(f"request {r['index']}: no first-token event")
    joined = sum(1 for r in records if r.get("trace_id"))
    print(json.dumps({"metrics": sorted(seen), "spans": len(spans), "errors": errors, "joined": joined}))


if __name__ == "__main__":
    main()
