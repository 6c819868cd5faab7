#!/usr/bin/env python3
# Per-source-line attribution of an ncu SASS source page (CSV) for one kernel, through the
# line info of the same binary (nvdisasm -g -c of its cubin; the build uses -lineinfo).
# Usage: sass_attribution.py DISASM KERNEL_SUBSTRING SOURCE_CSV [N]
#   DISASM: nvdisasm -g -c output of the cubin (cuobjdump -xelf <name>.cubin BINARY first)
# Prints instructions and stall samples by file and by line, the overall stall reasons and
# the N instructions with the most samples.
import collections, csv, re, sys

disasm, kernel, source_csv = sys.argv[1:4]
top_n = int(sys.argv[4]) if len(sys.argv) > 4 else 25

ins, cur, inside = [], ('?', 0), False
for line in open(disasm):
    if line.startswith('.text.'):
        inside = kernel in line
        continue
    if not inside:
        continue
    m = re.match(r'\s*//## File "(.*)", line (\d+)', line)
    if m:
        cur = (m.group(1).split('/')[-1], int(m.group(2)))
        continue
    m = re.match(r'\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;', line)
    if m:
        ins.append((int(m.group(1), 16), cur[0], cur[1], m.group(2)))

rows = list(csv.reader(open(source_csv)))
header, data = rows[1], rows[2:]
if len(data) != len(ins):
    sys.exit(f'{len(ins)} instructions in the disassembly, {len(data)} rows in the CSV')
executed = header.index('Instructions Executed')
samples = header.index('Warp Stall Sampling (All Samples)')
stalls = [(i, h[len('stall_'):]) for i, h in enumerate(header)
          if h.startswith('stall_') and 'Not Issued' not in h]

def num(r, i):
    return int(r[i] or 0)

inst_by, samp_by, inst_file, samp_file, reasons = (collections.Counter() for _ in range(5))
for (_, f, ln, _), r in zip(ins, data):
    inst_by[(f, ln)] += num(r, executed)
    samp_by[(f, ln)] += num(r, samples)
    inst_file[f] += num(r, executed)
    samp_file[f] += num(r, samples)
    for i, h in stalls:
        reasons[h] += num(r, i)
total_inst, total_samp = sum(inst_file.values()), sum(samp_file.values())
total_reasons = sum(reasons.values())
print(f'{len(ins)} SASS instructions, {total_inst} warp instructions executed, '
      f'{total_samp} stall samples')
print('stall reasons:', ', '.join(f'{h} {100 * v / total_reasons:.1f}%'
                                  for h, v in reasons.most_common(8)))
print('\nby file: instructions, samples')
for f, n in inst_file.most_common():
    print(f'  {f:30s} {100 * n / total_inst:5.1f}% {100 * samp_file[f] / total_samp:5.1f}%')
print('\nby line (top 40 by instructions): instructions, samples')
for (f, ln), n in inst_by.most_common(40):
    print(f'  {f:30s} {ln:5d} {100 * n / total_inst:5.1f}% {100 * samp_by[(f, ln)] / total_samp:5.1f}%')
print(f'\ntop {top_n} instructions by samples: address, line, executed, samples, top reasons')
for (a, f, ln, text), r in sorted(zip(ins, data), key=lambda x: -num(x[1], samples))[:top_n]:
    top = sorted(((num(r, i), h) for i, h in stalls), reverse=True)[:2]
    print(f'  {a:05x} {f[:18]:18s}{ln:5d} {num(r, executed):>9} '
          f'{100 * num(r, samples) / total_samp:5.1f}%  {top}  {text[:48]}')
