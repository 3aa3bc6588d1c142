"""Summarises one scripts/bench-load.sh run directory: medians over repeats, ratios, client CPU
per request, and agent-server's own time per memory operation from /metrics."""

import glob
import json
import os
import re
import statistics
import sys

out = sys.argv[1]


def judge_step(name):
    files = glob.glob(os.path.join(out, "judge", name, "load-*", "results.json"))
    if not files:
        return None
    with open(files[0]) as f:
        return json.load(f)["steps"][0]


def cpu_seconds(name):
    try:
        with open(os.path.join(out, name + ".cpu")) as f:
            user, system = f.read().split()[-2:]
        return float(user) + float(system)
    except (OSError, ValueError):
        return None


def wrk(name):
    try:
        with open(os.path.join(out, name + ".log")) as f:
            text = f.read()
    except OSError:
        return None
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)", text, re.M)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    return {
        "rps": float(rps.group(1)) if rps else None,
        "p99_ms": float(p99.group(1)) * scale[p99.group(2)] if p99 else None,
        "non_2xx": int(errors.group(1)) if errors else 0,
    }


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(v, digits=0):
    return "-" if v is None else f"{v:,.{digits}f}"


def repeats(prefix):
    return sorted(
        {int(m.group(1)) for p in os.listdir(out) if (m := re.match(prefix + r"-(\d+)\.", p))}
    )


def judge_row(label, name):
    steps = [judge_step(f"{name}-{r}") for r in repeats(name)]
    steps = [s for s in steps if s]
    if not steps:
        return None
    rps = med([s["throughput"]["requests_per_s"] for s in steps])
    p50 = med([s["latency"]["p50_ms"] for s in steps if s["latency"]])
    p99 = med([s["latency"]["p99_ms"] for s in steps if s["latency"]])
    cpu = med([s["client"]["cpu_us_per_request"] for s in steps])
    errors = sum(s["requests"]["failed"] for s in steps)
    saturated = sum(1 for s in steps if s["client"]["saturated"])
    print(
        f"{label:<44} {fmt(rps):>10} {fmt(p50, 2):>8} {fmt(p99, 2):>8} {fmt(cpu, 1):>10} "
        f"{errors:>7} {saturated}/{len(steps)}"
    )
    return rps


def memory_ms(rep, name="a-agent-judge"):
    """Mean server-side ms per memory operation over the agent run, from /metrics deltas."""

    def read(path):
        sums = {}
        try:
            with open(path) as f:
                for line in f:
                    m = re.match(
                        r'agentwall_(memory_operation|http_request)_duration_seconds_(sum|count)\{([^}]*)\} ([\d.e+-]+)',
                        line,
                    )
                    if m:
                        key = (m.group(1), m.group(3), m.group(2))
                        sums[key] = sums.get(key, 0.0) + float(m.group(4))
        except OSError:
            pass
        return sums

    before = read(os.path.join(out, f"{name}-{rep}.before.metrics"))
    after = read(os.path.join(out, f"{name}-{rep}.after.metrics"))
    result = {}
    for (kind, labels, part), value in after.items():
        if part != "sum":
            continue
        count = after.get((kind, labels, "count"), 0) - before.get((kind, labels, "count"), 0)
        total = value - before.get((kind, labels, "sum"), 0)
        if count > 0 and ("chat" in labels or kind == "memory_operation"):
            result[f"{kind}{{{labels}}}"] = (count, total / count * 1000)
    return result


# Every part runs the same number of repeats; count them on whichever parts ran.
ran = {int(m.group(1)) for p in os.listdir(out) if (m := re.match(r".+-(\d+)\.(?:cpu|log)$", p))}
print(f"bench-load run {os.path.basename(out)}; medians over {len(ran)} repeats")
print(f"{'measurement':<44} {'req/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'client µs':>10} {'errors':>7} saturated")
bare = judge_row("(a) bare actix-web, judge, c=64", "a-bare-judge")
agent = judge_row("(a) agent-server, judge, c=64", "a-agent-judge")
if bare and agent:
    print(f"    agent-server / bare (judge): {agent / bare:.1%}")
baseline = judge_row("(a) agent-server BASELINE, judge, c=64", "a-baseline-judge")
if baseline and agent:
    print(f"    agent-server / baseline: {agent / baseline:.1f}x")
    for label, name in (("this tree", "a-agent-judge"), ("baseline", "a-baseline-judge")):
        for rep in repeats(name):
            for key, (count, ms) in sorted(memory_ms(rep, name).items()):
                print(f"    {label} repeat {rep}: server-side mean {ms:.3f} ms over {count:.0f}: {key}")
wb = [wrk(f"a-bare-wrk-{r}") for r in repeats("a-bare-wrk")]
wa = [wrk(f"a-agent-wrk-{r}") for r in repeats("a-agent-wrk")]
if any(wb) and any(wa):
    b, a = med([w["rps"] for w in wb if w]), med([w["rps"] for w in wa if w])
    print(f"{'(a) bare actix-web, wrk, c=64':<44} {fmt(b):>10} {'':>8} {fmt(med([w['p99_ms'] for w in wb if w]), 2):>8}")
    print(f"{'(a) agent-server, wrk, c=64':<44} {fmt(a):>10} {'':>8} {fmt(med([w['p99_ms'] for w in wa if w]), 2):>8}"
          f"   non-2xx {sum(w['non_2xx'] for w in wa if w)}")
    if a and b:
        print(f"    agent-server / bare (wrk): {a / b:.1%}")
judge_row("(b) bare actix-web, judge, stream, c=64", "b-bare-judge")
judge_row("(b) agent-server, judge, stream, c=64", "b-agent-judge")
for name, (count, ms) in sorted(memory_ms(1).items()):
    print(f"    server-side mean {ms:.3f} ms over {count:.0f}: {name}")

if repeats("h-bare-judge"):
    print("(h) the whole machine: servers with 2 workers, nothing pinned, generator on the same cores")
h_bare = judge_row("(h) bare actix-web, judge, c=64", "h-bare-judge")
h_agent = judge_row("(h) agent-server, judge, c=64", "h-agent-judge")
if h_bare and h_agent:
    print(f"    agent-server / bare (judge): {h_agent / h_bare:.1%}")
judge_row("(h) bare actix-web, judge, stream, c=64", "h-bare-stream-judge")
judge_row("(h) agent-server, judge, stream, c=64", "h-agent-stream-judge")

step = judge_step("c-judge")
if step or os.path.exists(os.path.join(out, "c-guidellm.json")):
    print("(c) generators against the bare server, streaming, 16 prompt / 16 output tokens")
judge_cpu = cpu_seconds("c-judge")
if step:
    made = step["client"]["requests_including_warmup"]
    per = judge_cpu / made * 1e6 if judge_cpu and made else None
    print(f"    judge:    {fmt(step['throughput']['requests_per_s'])} streams/s, "
          f"{fmt(per, 1)} µs client CPU per request (process time {fmt(judge_cpu, 2)} s / {made} requests)")
guide_path = os.path.join(out, "c-guidellm.json")
if os.path.exists(guide_path):
    with open(guide_path) as f:
        report = json.load(f)
    bench = report["benchmarks"][0]
    metrics = bench["metrics"]
    rps = metrics["requests_per_second"]["successful"]["mean"]
    totals = metrics["request_totals"]
    made = sum(totals.get(k, 0) or 0 for k in ("successful", "errored", "incomplete"))
    total_cpu = cpu_seconds("c-guidellm")
    startup = cpu_seconds("c-guidellm-startup") or 0.0
    cpu = total_cpu - startup if total_cpu else None
    per = cpu / made * 1e6 if cpu and made else None
    print(f"    guidellm: {fmt(rps)} streams/s, {fmt(per, 1)} µs client CPU per request "
          f"(process-tree time {fmt(total_cpu, 2)} s minus {fmt(startup, 2)} s start-up / {made} requests)")
    if step and rps and per and judge_cpu:
        judge_per = judge_cpu / step["client"]["requests_including_warmup"] * 1e6
        print(f"    judge / guidellm: {step['throughput']['requests_per_s'] / rps:.1f}x the rate, "
              f"{judge_per / per:.3f}x the CPU per request")


def ttft(name):
    """Median over repeats of the TTFT p50 and p99 (ms)."""
    steps = [judge_step(f"{name}-{r}") for r in repeats(name)]
    steps = [s for s in steps if s and s.get("ttft")]
    if not steps:
        return None
    return med([s["ttft"]["p50_ms"] for s in steps]), med([s["ttft"]["p99_ms"] for s in steps])


def ttft_overhead(title, direct_name, agent_name):
    direct, through = ttft(direct_name), ttft(agent_name)
    if not (direct and through):
        return
    print(title)
    judge_row("    upstream directly", direct_name)
    judge_row("    through agent-server", agent_name)
    for label, d, t in (("p50", direct[0], through[0]), ("p99", direct[1], through[1])):
        print(f"    TTFT {label} {d:.3f} -> {t:.3f} ms: agent-server adds {t - d:.3f} ms")


ttft_overhead("(d) upstream mode, streaming, c=16: time to first token (ms, medians of repeats)",
              "d-direct-judge", "d-agent-judge")
ttft_overhead("(d) upstream mode, streaming, open loop at 200 req/s: time to first token",
              "d-direct-rate-judge", "d-agent-rate-judge")
ttft_overhead("(h) upstream mode on the whole machine, streaming, c=16: time to first token",
              "h-direct-judge", "h-upstream-judge")


def rss_kib(name):
    try:
        with open(os.path.join(out, name + ".rss")) as f:
            values = dict(re.findall(r"(Vm\w+):\s+(\d+) kB", f.read()))
        return int(values["VmRSS"]), int(values["VmHWM"])
    except (OSError, KeyError):
        return None


if rss_kib("e-idle"):
    print("(e) agent-server resident memory (VmRSS, peak VmHWM), embedded store, default cache budget")
    for label, name in (
        ("idle, fresh data directory", "e-idle"),
        ("after turns on 1,000 concurrent sessions", "e-sessions"),
        ("after 1,000,000 facts injected (1,000 x 1,000)", "e-facts"),
        ("after turns on those 1,000 sessions", "e-facts-turns"),
        ("same, restarted with --memory-cache-items 1200000", "e-bigcache-turns"),
    ):
        values = rss_kib(name)
        if values:
            print(f"    {label:<48} {values[0] / 1024:8.1f} MiB   peak {values[1] / 1024:8.1f} MiB")
    try:
        with open(os.path.join(out, "e-inject.log")) as f:
            print("    inject: " + f.read().strip())
        with open(os.path.join(out, "e-disk.txt")) as f:
            print(f"    data directory on disk: {int(f.read().split()[0]) / 2**20:.0f} MiB")
    except OSError:
        pass
    judge_row("    turns, 1,000 sessions, before the facts", "e-sessions")
    judge_row("    turns, 1,000 sessions of 1,000 facts", "e-facts-turns")
    judge_row("    same, cache holding every session", "e-bigcache-turns")

plain, traced = repeats("g-plain-judge"), repeats("g-traced-judge")
if plain and traced:
    print("(g) trace export to Arize Phoenix over OTLP/HTTP, agent-server, c=64 (medians)")
    a = judge_row("    not exporting", "g-plain-judge")
    b = judge_row("    exporting every span", "g-traced-judge")
    c = judge_row("    exporting 10 % of traces (sampled)", "g-sampled-judge")
    if a and b:
        print(f"    exporting every span / not exporting: {b / a:.1%} of the throughput")
    if a and c:
        print(f"    exporting a 10 % sample / not exporting: {c / a:.1%} of the throughput")
