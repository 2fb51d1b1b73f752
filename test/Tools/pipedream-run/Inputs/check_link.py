"""Checks a `pipedream-run --measure-link` file: a pipedream profile with no
ops and a `link` whose messages' cost is the larger of their one-way time
and their send + receive CPU time, and whose latency and bandwidth are the
line that least relative squares fit through those costs (recomputed here
in float64; negative latency clamped to 0, as the runtime does)."""
import json
import sys

path, transport, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(path) as f:
    root = json.load(f)
assert root["format"] == "pipedream-profile" and root["version"] == 1, root
assert root["ops"] == [], root["ops"]
link = root["link"]
assert link["transport"] == transport and link["ranks"] == ranks, link
samples = link["messages"]
sizes = [s["bytes"] for s in samples]
assert sizes == [1024 * 4**i for i in range(7)], sizes
for s in samples:
    assert s["one_way"] > 0 and s["send_receive_cpu"] > 0, s
    assert s["seconds"] == max(s["one_way"], s["send_receive_cpu"]), s

sw = sx = sy = sxx = sxy = 0.0
for s in samples:
    w, x, t = 1 / s["seconds"] ** 2, float(s["bytes"]), s["seconds"]
    sw += w; sx += w * x; sy += w * t; sxx += w * x * x; sxy += w * x * t
det = sw * sxx - sx * sx
slope = (sw * sxy - sx * sy) / det
intercept = (sy - slope * sx) / sw
if slope <= 0:
    big = samples[-1]
    slope, intercept = big["seconds"] / big["bytes"], 0.0
latency, bandwidth = max(0.0, intercept), 1 / slope
assert abs(link["latency"] - latency) <= 1e-9 + 1e-6 * latency, (link, latency)
assert abs(link["bandwidth"] - bandwidth) <= 1e-6 * bandwidth, (link, bandwidth)
print(f"link ok: {transport}, {len(samples)} sizes")
