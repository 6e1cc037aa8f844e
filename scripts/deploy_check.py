#!/usr/bin/python3
"""The checks of deploy/ and docker-compose.yml that need parsing (scripts/deploy-check.sh runs
them; Debian's python3 and python3-yaml, no other module).

  deploy_check.py names FILE...             metric names the dashboards/rule files query
  deploy_check.py exprs DASHBOARD INTERVAL  the dashboard's queries, variables filled in
  deploy_check.py scraped METRICS NAME...   every NAME has a series in METRICS (a /metrics text)
  deploy_check.py queries URL DASHBOARD INTERVAL
                                            each dashboard query has a result in Prometheus
  deploy_check.py rules URL                 every rule Prometheus loaded evaluates without error
  deploy_check.py compose COMPOSE REPO      docker-compose.yml against the repository
  deploy_check.py compose-env COMPOSE       the consumer's environment, one NAME=VALUE a line

Each check prints what is wrong, one line per problem, and exits 1 if anything is.
"""
import json
import re
import sys
import urllib.parse
import urllib.request

import yaml

# Words of PromQL that look like metric names but are not.
KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan", "atan2"}
# Series Prometheus records itself for each target: allowed in rules, not exported by exo.
PROMETHEUS_SERIES = {"up"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


def metric_names(expr):
    """The metric names a PromQL expression selects (label matchers, strings, ranges, grouping
    labels and function names taken out)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        before = e[m.start() - 1] if m.start() > 0 else " "
        if before.isdigit() or before in ".$":  # 1e3, 5m, a variable
            continue
        if e[m.end():].lstrip().startswith("("):  # a function or an aggregation
            continue
        if m.group(0).lower() in KEYWORDS:
            continue
        names.add(m.group(0))
    return names


def dashboard_targets(path):
    """(panel title, expr) of every query of a Grafana dashboard, rows' panels included."""
    with open(path) as f:
        dash = json.load(f)
    out = []

    def walk(panels):
        for p in panels:
            walk(p.get("panels", []))
            for t in p.get("targets", []):
                out.append((p.get("title", "?"), t.get("expr", "")))

    walk(dash.get("panels", []))
    return out


def rule_exprs(path):
    with open(path) as f:
        doc = yaml.safe_load(f)
    return [(r.get("alert") or r.get("record"), str(r["expr"]))
            for g in doc["groups"] for r in g["rules"]]


def exprs_of(path):
    return dashboard_targets(path) if path.endswith(".json") else rule_exprs(path)


def fill(expr, interval):
    return expr.replace("$__rate_interval", interval).replace("$instance", ".*")


def cmd_names(paths):
    problems = []
    names = set()
    for path in paths:
        pairs = exprs_of(path)
        if not pairs:
            problems.append(f"{path}: no queries found")
        for title, expr in pairs:
            if not expr.strip():
                problems.append(f"{path}: '{title}' has an empty query")
            found = metric_names(expr)
            if not found:
                problems.append(f"{path}: '{title}' names no metric: {expr}")
            for n in found:
                if not n.startswith("exo_") and n not in PROMETHEUS_SERIES:
                    problems.append(f"{path}: '{title}' names {n}, not a metric of exo")
            names |= found
    for n in sorted(names):
        print(n)
    return problems


def cmd_exprs(path, interval):
    for _, expr in dashboard_targets(path):
        print(fill(expr, interval))
    return []


def series_names(metrics_text):
    names = set()
    for line in metrics_text.splitlines():
        if line and not line.startswith("#"):
            names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return names


def cmd_scraped(metrics_path, wanted):
    with open(metrics_path) as f:
        have = series_names(f.read())
    problems = []
    for n in wanted:
        if n in PROMETHEUS_SERIES:
            continue
        need = [n]
        base = next((n[: -len(s)] for s in HISTOGRAM_SUFFIXES if n.endswith(s)), None)
        if base is not None and base + "_bucket" in have | {n}:
            need = [base + s for s in HISTOGRAM_SUFFIXES]  # a histogram: all three series
        for m in need:
            if m not in have:
                problems.append(f"{m} is queried but the daemon's /metrics has no such series")
    return problems


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def cmd_queries(base, path, interval):
    problems = []
    for title, expr in dashboard_targets(path):
        q = fill(expr, interval)
        try:
            answer = get_json(base + "/api/v1/query?" + urllib.parse.urlencode({"query": q}))
        except Exception as e:  # an HTTP 400 is a query Prometheus cannot parse
            problems.append(f"'{title}': {q}: Prometheus refused it: {e}")
            continue
        if answer.get("status") != "success":
            problems.append(f"'{title}': {q}: {answer.get('error')}")
        elif not answer["data"]["result"]:
            problems.append(f"'{title}': {q}: no result from the scraped daemon")
    return problems


def cmd_rules(base):
    problems = []
    groups = get_json(base + "/api/v1/rules")["data"]["groups"]
    rules = [r for g in groups for r in g["rules"]]
    if not rules:
        problems.append("Prometheus loaded no rules")
    for r in rules:
        if r.get("health") != "ok":
            problems.append(f"rule {r['name']}: health {r.get('health')}: {r.get('lastError', '')}")
    return problems


def load_compose(path):
    with open(path) as f:
        return yaml.safe_load(f)


def consumer_env(compose):
    env = compose["services"]["consumer"].get("environment", {})
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def cmd_compose_env(path):
    for k, v in consumer_env(load_compose(path)).items():
        print(f"{k}={v}")
    return []


def cmd_compose(path, repo):
    import os

    c = load_compose(path)
    services = c.get("services", {})
    problems = []
    for name in ("kafka", "redis", "postgres", "migrate", "consumer"):
        if name not in services:
            problems.append(f"no service {name}")
    if problems:
        return problems
    # Every dependency waited for as healthy has a health check.
    for name, s in services.items():
        deps = s.get("depends_on", {})
        if isinstance(deps, list):
            problems.append(f"{name}: depends_on without conditions (waits for nothing)")
            continue
        for dep, how in deps.items():
            if dep not in services:
                problems.append(f"{name}: depends on unknown service {dep}")
            elif how.get("condition") == "service_healthy" and "test" not in services[dep].get("healthcheck", {}):
                problems.append(f"{name}: waits for {dep} to be healthy, but {dep} has no healthcheck test")
    consumer = services["consumer"]
    conditions = {d: h.get("condition") for d, h in consumer.get("depends_on", {}).items()}
    if conditions.get("migrate") != "service_completed_successfully":
        problems.append("consumer: does not wait for migrate to complete successfully")
    for dep in ("kafka", "redis", "postgres"):
        if conditions.get(dep) != "service_healthy":
            problems.append(f"consumer: does not wait for {dep} to be healthy")
    # The consumer's health check asks the endpoint's real paths.
    with open(os.path.join(repo, "framework/observability/http_endpoint.cpp")) as f:
        # The paths are the string literals that are a path alone ("/healthz"): the endpoint
        # compares the request's path with each of them (ObservabilityEndpoint::reply).
        served = set(re.findall(r'"(/[a-z]+)"', f.read()))
    test = consumer.get("healthcheck", {}).get("test", [])
    probed = [a for a in test if isinstance(a, str) and a.startswith("/") and not a.startswith("/usr")]
    for p in ("/healthz", "/readyz"):
        if p not in probed:
            problems.append(f"consumer: the healthcheck does not probe {p}")
    for p in probed:
        if p not in served:
            problems.append(f"consumer: the healthcheck probes {p}, which the endpoint does not serve ({sorted(served)})")
    probe = next((a for a in test if isinstance(a, str) and a.startswith("/usr/local/bin/")), None)
    with open(os.path.join(repo, "Dockerfile")) as f:
        dockerfile = f.read()
    if probe is None or f" {probe}" not in dockerfile:
        problems.append(f"consumer: the healthcheck runs {probe}, which the Dockerfile does not install")
    # The environment is the one config/docker.yaml reads, and nothing else.
    with open(os.path.join(repo, "config/docker.yaml")) as f:
        referenced = set(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)", f.read()))
    env = consumer_env(c)
    for k in env:
        if k.startswith("EXO_") and k not in referenced:
            problems.append(f"consumer: sets {k}, which config/docker.yaml does not read")
    # The endpoint listens where the published port and Prometheus' scrape target point.
    port = env.get("EXO_OBSERVABILITY_LISTEN", "").rsplit(":", 1)[-1]
    if not any(str(p).endswith(f":{port}") for p in consumer.get("ports", [])):
        problems.append(f"consumer: port {port} of EXO_OBSERVABILITY_LISTEN is not published")
    prom = yaml.safe_load(open(os.path.join(repo, "deploy/prometheus/prometheus.yml")))
    targets = [t for sc in prom["scrape_configs"] for s in sc.get("static_configs", []) for t in s["targets"]]
    if f"consumer:{port}" not in targets:
        problems.append(f"deploy/prometheus/prometheus.yml does not scrape consumer:{port} ({targets})")
    # Build context, bind mounts and the Dockerfile are where the file says.
    if consumer.get("build") not in (".", {"context": "."}):
        problems.append("consumer: not built from this repository's Dockerfile (build: .)")
    for name, s in services.items():
        for v in s.get("volumes", []):
            src = str(v).split(":", 1)[0]
            if src.startswith("./") and not os.path.exists(os.path.join(repo, src)):
                problems.append(f"{name}: mounts {src}, which does not exist")
    return problems


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[1], argv[2:]
    handlers = {
        "names": lambda: cmd_names(args),
        "exprs": lambda: cmd_exprs(args[0], args[1]),
        "scraped": lambda: cmd_scraped(args[0], args[1:]),
        "queries": lambda: cmd_queries(args[0], args[1], args[2]),
        "rules": lambda: cmd_rules(args[0]),
        "compose": lambda: cmd_compose(args[0], args[1]),
        "compose-env": lambda: cmd_compose_env(args[0]),
    }
    if cmd not in handlers:
        print(__doc__, file=sys.stderr)
        return 2
    problems = handlers[cmd]()
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
