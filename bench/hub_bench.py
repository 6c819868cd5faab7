"""Pull and push throughput of `df11` beside `huggingface_hub` over loopback, on the same local
Hub server (tests/hub/hub_server.py) in the same run, with each client's peak RSS.

  python3 bench/hub_bench.py --df11 build/cli/df11 --mkmodel build/tools/df11-mkmodel \
      --size 3GB --runs 3 --work /tmp/df11-hub-bench [--df11-before OLD/df11]

Each client runs in its own process (RSS is that process's ru_maxrss); runs alternate
df11 / huggingface_hub so that drift on a shared machine hits both. Pull: the model is in the
server, each run starts from an empty cache. Push: each run starts from a server that has no
object of the model (the objects are dropped between runs), so every byte is sent, and from
the folder as `df11 compress` wrote it (no README.md: df11 writes its model card, as on a
first push).
huggingface_hub runs with HF_HUB_DISABLE_XET=1 (the plain LFS path the server implements).
--upload-mbps caps the server's LFS uploads (all connections together) at that rate: a
network link instead of loopback, where a push is bound by the link rather than the CPU.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "hub"))
from hub_server import LocalHub  # noqa: E402

TOKEN = "hf_benchToken0123456789"

HF_PULL = """
import sys, huggingface_hub
huggingface_hub.snapshot_download(sys.argv[1], cache_dir=sys.argv[2], endpoint=sys.argv[3], token=sys.argv[4])
"""
HF_PUSH = """
import sys, huggingface_hub
api = huggingface_hub.HfApi(endpoint=sys.argv[3], token=sys.argv[4])
api.create_repo(sys.argv[1], exist_ok=True)
api.upload_folder(repo_id=sys.argv[1], folder_path=sys.argv[2])
"""


def timed(cmd, env):
    """Runs cmd; returns (seconds, peak RSS in MB of that child). Adds the child's CPU seconds
    (user + system) to CLIENT_CPU and this process's (the server's threads) to SERVER_CPU."""
    # ru_maxrss of RUSAGE_CHILDREN is the max over all waited children: run each command
    # through a tiny wrapper that reports its own child's usage.
    wrapper = ("import resource,subprocess,sys,time,json;t=time.monotonic();"
               "r=subprocess.run(sys.argv[1:]);d=time.monotonic()-t;"
               "u=resource.getrusage(resource.RUSAGE_CHILDREN);"
               "print(json.dumps([r.returncode,d,u.ru_maxrss,u.ru_utime+u.ru_stime]))")
    server_start = time.process_time()
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], env=env, capture_output=True,
                         text=True)
    SERVER_CPU.append(time.process_time() - server_start)
    rc, seconds, rss_kb, cpu = json.loads(out.stdout.strip().splitlines()[-1])
    CLIENT_CPU.append(cpu)
    if rc != 0:
        raise SystemExit(f"{cmd[:3]} failed: {out.stderr[-2000:]}")
    if "--json" in cmd:
        # df11 push --json: the child's JSON precedes the wrapper's line.
        doc = json.loads("\n".join(out.stdout.strip().splitlines()[:-1]))
        PHASES.append(doc["seconds"])
    return seconds, rss_kb / 1024


PHASES = []
PHASE_OWNER = []
CLIENT_CPU = []  # per timed() call
SERVER_CPU = []


def folder_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def drop_objects(hub):
    st = hub.state
    with st.lock:
        for oid in list(st.lfs_objects):
            os.unlink(st.object_path(oid))
        st.lfs_objects.clear()
        st.repos.clear()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--df11", required=True)
    ap.add_argument("--mkmodel", required=True)
    ap.add_argument("--size", default="3GB")  # its DF11 copy (pushed) is over 2 GB
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default="/tmp/df11-hub-bench")
    ap.add_argument("--df11-before", help="a second df11 binary (e.g. the previous main): its "
                    "push runs beside the two clients, for a same-run before/after")
    ap.add_argument("--upload-mbps", type=float,
                    help="cap LFS uploads, all together, at this many MB/s (a network link "
                         "instead of loopback)")
    args = ap.parse_args()

    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    model = os.path.join(args.work, "model")
    subprocess.run([args.mkmodel, model, "--size", args.size, "--seed", "11"], check=True,
                   capture_output=True)
    total = folder_bytes(model)
    # The Hub's own numbers: 5 GB-class files go multipart in 64 MiB parts; smaller ones basic.
    hub = LocalHub(os.path.join(args.work, "server"), token=TOKEN,
                   multipart_threshold=256 << 20, chunk_size=64 << 20,
                   upload_rate=args.upload_mbps * 1e6 if args.upload_mbps else None)
    env = dict(os.environ, HF_ENDPOINT=hub.url, HF_TOKEN=TOKEN, HF_HUB_DISABLE_XET="1",
               HF_HUB_DISABLE_PROGRESS_BARS="1", HF_HUB_DISABLE_TELEMETRY="1")
    env.pop("HF_HUB_CACHE", None)

    results = {"df11 pull": [], "huggingface_hub pull": [], "df11 push": [],
               "huggingface_hub push": []}
    if args.df11_before:
        results["df11-before push"] = []
    rss = {k: [] for k in results}
    cpu = {k: [] for k in results}  # (client CPU s, server CPU s) per run

    # Push runs (alternating), each onto a server without the objects.
    for run in range(args.runs):
        for name in [n for n in results if n.endswith(" push")]:
            drop_objects(hub)
            # The folder as compress leaves it (no README.md): df11 push writes its model card
            # on the way, as a first push does; a card from an earlier run is removed.
            card = os.path.join(df11_dir_for(args, model), "README.md")
            if os.path.exists(card):
                os.unlink(card)
            # Both clients push the same DF11 folder (df11 push only takes verified DF11
            # folders); df11's time includes its verify pass (beside the upload).
            repo = f"bench/push-{run}-{name.split()[0]}"
            if name.startswith("df11"):
                binary = args.df11 if name == "df11 push" else args.df11_before
                cmd = [binary, "push", df11_dir_for(args, model), repo, "--json"]
                PHASE_OWNER.append(name.split()[0])
            else:
                cmd = [sys.executable, "-c", HF_PUSH, repo, df11_dir_for(args, model), hub.url, TOKEN]
            s, r = timed(cmd, dict(env, HF_HOME=os.path.join(args.work, "home")))
            results[name].append(s)
            rss[name].append(r)
            cpu[name].append((CLIENT_CPU[-1], SERVER_CPU[-1]))

    # Pull runs: the model as huggingface_hub uploaded it.
    drop_objects(hub)
    subprocess.run([sys.executable, "-c", HF_PUSH, "bench/model", model, hub.url, TOKEN],
                   env=env, check=True)
    for run in range(args.runs):
        for name in ("df11 pull", "huggingface_hub pull"):
            home = os.path.join(args.work, "home-pull")
            shutil.rmtree(home, ignore_errors=True)
            if name == "df11 pull":
                cmd = [args.df11, "pull", "bench/model", "-q"]
            else:
                cmd = [sys.executable, "-c", HF_PULL, "bench/model", os.path.join(home, "hub"),
                       hub.url, TOKEN]
            s, r = timed(cmd, dict(env, HF_HOME=home))
            results[name].append(s)
            rss[name].append(r)
            cpu[name].append((CLIENT_CPU[-1], SERVER_CPU[-1]))
            got = folder_bytes(os.path.join(home, "hub", "models--bench--model", "blobs"))
            if got < total - (1 << 20):
                raise SystemExit(f"{name}: only {got} of {total} bytes in the cache")
    hub.close()

    push_bytes = folder_bytes(df11_dir_for(args, model))
    print(f"model: {total / 1e9:.2f} GB BF16 ({args.size}), DF11 copy pushed: {push_bytes / 1e9:.2f} GB, "
          f"runs: {args.runs}; both clients with their default parallelism (8 transfers)"
          + (f"; uploads capped at {args.upload_mbps:g} MB/s" if args.upload_mbps else ""))
    print("| operation | client | median s | GB/s (median) | runs (s) | peak RSS MB (max) "
          "| client CPU s (median) | server CPU s (median) |")
    print("|---|---|---:|---:|---|---:|---:|---:|")
    for name, times in results.items():
        size = push_bytes if "push" in name else total
        med = statistics.median(times)
        op, client = name.split()[1], name.split()[0]
        print(f"| {op} | {client} | {med:.2f} | {size / 1e9 / med:.2f} | "
              f"{', '.join(f'{t:.2f}' for t in times)} | {max(rss[name]):.0f} | "
              f"{statistics.median(c for c, _ in cpu[name]):.2f} | "
              f"{statistics.median(s for _, s in cpu[name]):.2f} |")
    for owner in sorted(set(PHASE_OWNER)):
        print(f"{owner} push phases (s): " + "; ".join(
            f"verify {p['verify']:.2f}, transfer {p['transfer']:.2f}"
            + (f" (waiting for verify {p['waiting_for_verify']:.2f})" if "waiting_for_verify" in p
               else f", hash {p.get('hash', 0):.2f}")
            for o, p in zip(PHASE_OWNER, PHASES) if o == owner))


_DF11_DIRS = {}


def df11_dir_for(args, model):
    """The DF11 copy of the model (compressed once): what both clients push."""
    if model not in _DF11_DIRS:
        out = os.path.join(args.work, "model-df11")
        subprocess.run([args.df11, "compress", model, "-o", out, "-q"], check=True)
        _DF11_DIRS[model] = out
    return _DF11_DIRS[model]


if __name__ == "__main__":
    main()
