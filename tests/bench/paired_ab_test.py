#!/usr/bin/env python3
"""bench/paired_ab.py: the figures come from the runs themselves (CPU, wall, peak memory,
pairwise ratios), and a command that cannot start is refused with exit status 2."""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "bench", "paired_ab.py")
PY = sys.executable


def medians(text):
    rows = {}
    for line in text.splitlines():
        parts = line.rsplit(None, 3)
        if len(parts) == 4:
            try:
                rows[parts[0].strip()] = [float(x) for x in parts[1:]]
            except ValueError:
                pass
    return rows


class PairedAbTest(unittest.TestCase):
    def run_tool(self, *args):
        return subprocess.run([PY, TOOL, *args], capture_output=True, text=True, timeout=120)

    def test_cpu_wall_peak_and_ratios_are_measured(self):
        # A: ~0.3 s of CPU and a 150 MiB buffer touched; B: 0.15 s asleep, no CPU to speak of.
        a = [PY, "-c", "import time; b = bytearray(150 << 20); t = time.process_time()\n"
             "while time.process_time() - t < 0.3: pass"]
        b = f"{PY} -c 'import time; time.sleep(0.15)'"
        done = self.run_tool("-n", "3", "--warmup", "0", "--vs", b, "--", *a)
        self.assertEqual(done.returncode, 0, done.stderr)
        rows = medians(done.stdout)
        self.assertIn("A exit 0 (3 runs)", done.stdout)
        self.assertIn("B exit 0 (3 runs)", done.stdout)
        low, mid, high = rows["A cpu s"]
        self.assertTrue(low <= mid <= high)
        self.assertGreaterEqual(mid, 0.28)
        self.assertGreaterEqual(rows["A peak MiB"][1], 140)
        self.assertLess(rows["B peak MiB"][1], 140)
        self.assertGreaterEqual(rows["B wall s"][1], 0.14)
        # Lower bounds only (the busy loop and the sleep guarantee them), and comparisons
        # between A and B: a loaded machine makes both slower, so no upper bound on a time.
        # A is B's interpreter start plus at least 0.3 s of CPU: B's most is below A's least.
        self.assertLess(rows["B cpu s"][2], rows["A cpu s"][0])
        # Pair by pair: A's wall over B's is at least 0.28 / B's longest wall.
        self.assertGreater(rows["A/B cpu"][1], 1.0)
        self.assertGreater(rows["A/B wall"][0], 0.28 / rows["B wall s"][2])

    def test_exit_codes_are_reported_not_acted_on(self):
        done = self.run_tool("-n", "2", "--", PY, "-c", "raise SystemExit(3)")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("A exit 3 (2 runs)", done.stdout)
        self.assertNotIn("A/B", done.stdout)

    def test_a_command_that_cannot_start_is_refused(self):
        done = self.run_tool("-n", "1", "--", "/nonexistent/command")
        self.assertEqual(done.returncode, 2)
        self.assertIn("cannot start", done.stderr)

    def test_no_command_is_a_usage_error(self):
        self.assertEqual(self.run_tool("-n", "1").returncode, 2)


if __name__ == "__main__":
    unittest.main()
