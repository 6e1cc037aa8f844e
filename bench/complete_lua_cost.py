#!/usr/bin/env python3
"""Two versions of complete.lua side by side on one Redis: Redis's own time per completed key.

    python3 bench/complete_lua_cost.py PORT OLD_COMPLETE_LUA NEW_COMPLETE_LUA
    e.g. git show HEAD~1:lua/complete.lua > /tmp/old.lua
         python3 bench/complete_lua_cost.py 6379 /tmp/old.lua lua/complete.lua

Six alternating rounds (old first, then new first, ...): each claims 50 calls x 1,000 fresh
keys with lua/claim.lua, then completes them with one version in one pipeline; the server's
EVALSHA time comes from INFO commandstats. Prints the medians and their ratio. Use a
throw-away Redis (scripts/services.sh start DIR): it writes 600,000 keys.
"""
import os, socket, sys, statistics
if len(sys.argv) != 4:
    sys.exit(__doc__)
port = int(sys.argv[1])
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
s = socket.create_connection(("127.0.0.1", port))
f = s.makefile("rb")
def enc(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)
def read():
    line = f.readline()
    t = line[:1]; rest = line[1:-2]
    if t in (b"+", b"-"): return rest
    if t == b":": return int(rest)
    if t == b"$":
        n = int(rest)
        if n < 0: return None
        d = f.read(n + 2); return d[:-2]
    if t == b"*":
        n = int(rest)
        return [read() for _ in range(n)] if n >= 0 else None
def cmd(*a):
    s.sendall(enc(*a)); return read()
def pipeline(cmds):
    s.sendall(b"".join(enc(*c) for c in cmds)); return [read() for _ in cmds]
claim = open(os.path.join(REPO, "lua", "claim.lua")).read()
old = open(sys.argv[2]).read()
new = open(sys.argv[3]).read()
sha = {n: cmd("SCRIPT", "LOAD", t).decode() for n, t in (("claim", claim), ("old", old), ("new", new))}
def evalsha_usec():
    info = cmd("INFO", "commandstats").decode()
    for line in info.splitlines():
        if line.startswith("cmdstat_evalsha:"):
            return int(line.split("usec=")[1].split(",")[0])
    return 0
results = {"old": [], "new": []}
K, CALLS = 1000, 50
n = 0
for rnd in range(6):
    for which in ("old", "new") if rnd % 2 == 0 else ("new", "old"):
        keys = [[f"bench:{which}:{rnd}:{c}:{i}" for i in range(K)] for c in range(CALLS)]
        claims = pipeline([["EVALSHA", sha["claim"], K, *ks, "owner-1", 30000] for ks in keys])
        calls = []
        for ks, reply in zip(keys, claims):
            args = ["owner-1", 60000]
            for r in reply:
                args += [r[1], '{"ok":true}', "COMPLETED", "0123456789abcdef0123456789abcdef"]
            calls.append(["EVALSHA", sha[which], K, *ks, *args])
        before = evalsha_usec()
        replies = pipeline(calls)
        assert all(x == b"OK" for r in replies for x in r), replies[0][:3]
        results[which].append((evalsha_usec() - before) / (K * CALLS))
print("server us per completed key, median of 6 alternating rounds of 50,000 keys:")
for w in ("old", "new"):
    print(f"  {w}: {statistics.median(results[w]):.3f}  runs={[round(x,3) for x in results[w]]}")
print(f"  new/old = {statistics.median(results['new'])/statistics.median(results['old']):.2f}")
