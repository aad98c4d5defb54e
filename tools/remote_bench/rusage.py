"""rusage.py LABEL PIDS CMD...: runs CMD (its JSON lines pass through, each with LABEL added),
then prints the command's peak RSS and CPU seconds, and the CPU seconds the server processes
PIDS (comma-separated; their children too) spent meanwhile."""
import json, os, resource, subprocess, sys
label, pids, cmd = sys.argv[1], [p for p in sys.argv[2].split(",") if p], sys.argv[3:]
def server_cpu():
    total = 0
    for pid in pids:
        for p in [pid] + open(f"/proc/{pid}/task/{pid}/children").read().split():
            try:
                f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
                total += (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
            except OSError:
                pass
    return total
before = server_cpu()
out = subprocess.run(cmd, capture_output=True, text=True)
after = server_cpu()
r = resource.getrusage(resource.RUSAGE_CHILDREN)
for line in out.stdout.splitlines():
    try:
        d = json.loads(line); d["label"] = label; print(json.dumps(d))
    except ValueError:
        print(line)
sys.stderr.write(out.stderr[-2000:])
print(json.dumps({"label": label, "rc": out.returncode, "client_maxrss_mb": r.ru_maxrss / 1024,
                  "client_cpu_s": r.ru_utime + r.ru_stime, "server_cpu_s": after - before}), flush=True)
