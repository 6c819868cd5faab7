import glob, json, os, re, sys
root = sys.argv[1]
rows = []
for f in glob.glob(os.path.join(root, "**", "*.best_config"), recursive=True):
    src = f[:-len(".best_config")] + ".py"
    name = "?"
    if os.path.exists(src):
        m = re.search(r"def (triton_\w+)\(", open(src).read())
        name = m.group(1) if m else "?"
    cfg = json.load(open(f))
    cfg.pop("triton_cache_hash", None); cfg.pop("time_taken_ms", None)
    rows.append((name, os.path.basename(os.path.dirname(f)), json.dumps(cfg, sort_keys=True)))
for r in sorted(rows):
    print(*r)
print(len(rows), "best configs")
