#!/usr/bin/env python3
"""bench/cpu_host_env.sh, sourced as a CPU scaling run does, with stub binaries: the row that
`timed` appends is computed from the run (wall, CPU, GB/s, exit status), its phases are
printed, the model commands get the 8B shape or --size, and a wrong call is refused."""

import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ENV = os.path.abspath(os.path.join(HERE, "..", "..", "bench", "cpu_host_env.sh"))


class CpuHostEnvTest(unittest.TestCase):
    def setUp(self):
        if shutil.which("bash") is None or not os.path.exists("/usr/bin/time"):
            self.skipTest("needs bash and GNU time (/usr/bin/time)")
        self.tmp = tempfile.mkdtemp()
        self.tools = os.path.join(self.tmp, "tools")
        os.makedirs(os.path.join(self.tools, "bin"))
        os.makedirs(os.path.join(self.tools, "lib"))
        self.args_file = os.path.join(self.tmp, "mkmodel-args")
        self.stub("df11-mkmodel", f'echo "$@" >> {self.args_file}; mkdir -p "$1"\n'
                  'head -c 3000000 /dev/zero > "$1/a.safetensors"\n'
                  'head -c 1000000 /dev/zero > "$1/b.safetensors"\n')
        # A busy command that prints a phase line, like `df11 compress -v`.
        self.stub("df11", 'end=$(( $(date +%s%N) + 300000000 ))\n'
                  'while [ "$(date +%s%N)" -lt "$end" ]; do :; done\n'
                  'echo "phases (seconds): planning 0.1 s"; echo other; exit "${FAIL:-0}"\n')
        self.out = os.path.join(self.tmp, "out")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def stub(self, name, body):
        path = os.path.join(self.tools, "bin", name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, 0o755)

    def bash(self, script):
        return subprocess.run(["bash", "-c", f"source {ENV} {self.tools} {self.out}\n" +
                               textwrap.dedent(script)],
                              capture_output=True, text=True, timeout=120)

    def test_timed_rows_come_from_the_runs(self):
        done = self.bash("""
            make_llama8b "$OUT/m"
            make_llama8b "$OUT/s" 300MB
            GB=$(model_gb "$OUT/m")
            echo "GB=$GB"
            mkdir -p "$OUT/d"
            timed ok "$OUT/d" df11 compress x
            [ -e "$OUT/d" ] && echo "outdir kept"
            FAIL=3 timed failed - df11 compress x
            echo "path=$(command -v df11)"
        """)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("GB=0.004", done.stdout)
        self.assertNotIn("outdir kept", done.stdout)
        self.assertIn(f"path={self.tools}/bin/df11", done.stdout)
        self.assertIn("phases (seconds): planning 0.1 s", done.stdout)
        self.assertNotIn("other", done.stdout)
        with open(os.path.join(self.out, "table.txt")) as f:
            rows = f.read().splitlines()
        self.assertEqual(len(rows), 2, rows)
        pattern = (r"^(\S+) +rc=(\d+) +([\d.]+) s +([\d.]+) GB/s cpu +([\d.]+) s "
                   r"\(([\d.]+)/GB, user ([\d.]+) sys ([\d.]+)\) rss \d+ MB$")
        for row, name, rc in zip(rows, ("ok", "failed"), ("0", "3")):
            m = re.match(pattern, row)
            self.assertIsNotNone(m, row)
            self.assertEqual((m.group(1), m.group(2)), (name, rc))
            wall, gbs, cpu, per_gb, user, sys_ = (float(m.group(i)) for i in range(3, 9))
            # The figures agree with one another, whatever the machine's speed (no absolute
            # time is asserted: a loaded machine gives the stub less CPU than its 0.3 s).
            # The stub waits until 0.3 s have passed, so the wall time cannot be shorter.
            self.assertGreaterEqual(wall, 0.29)
            self.assertAlmostEqual(gbs, 0.004 / wall, delta=0.0051)  # printed to 2 decimals
            self.assertAlmostEqual(cpu, user + sys_, delta=0.16)  # all three rounded to 0.1
            self.assertAlmostEqual(per_gb * 0.004, cpu, delta=0.051)
        self.assertTrue(os.path.exists(os.path.join(self.out, "r", "failed.log")))
        with open(self.args_file) as f:
            calls = f.read().splitlines()
        self.assertIn("--layers 32 --hidden 4096 --intermediate 14336 --vocab 128256", calls[0])
        self.assertIn("--shard-size 5GB --seed 1 --threads", calls[0])
        self.assertIn("--size 300MB --seed 1 --threads", calls[1])

    def test_host_facts_and_a_wrong_call(self):
        done = self.bash("host_facts > /dev/null; wc -l < \"$W/machine.txt\"")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertGreaterEqual(int(done.stdout.split()[-1]), 5)
        wrong = subprocess.run(["bash", "-c", f"source {ENV} {self.tools}; echo after"],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(wrong.returncode, 2)
        self.assertIn("usage", wrong.stderr)
        self.assertNotIn("after", wrong.stdout)


if __name__ == "__main__":
    unittest.main()
