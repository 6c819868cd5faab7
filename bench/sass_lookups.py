#!/usr/bin/env python3
# Instructions between the compact GEMM's codeword lookups, counted in its SASS (static, no GPU).
# Usage: sass_lookups.py DISASM
#   DISASM: `nvdisasm -c` of the compact GEMM's cubin (cuobjdump -xelf compact_gemm.sm_90a.cubin
#   BINARY first; nvdisasm and cuobjdump come with the CUDA toolkit, or from PyPI as
#   nvidia-cuda-nvdisasm and nvidia-cuda-cuobjdump).
# For each compact_gemm_kernel<NB, helpers> instance: its SASS instruction count and, in each
# run of a step's 8 lookups (each begins with the window's funnel shift, `SHF.R.W.U32` of two
# registers by a register), the instructions from one lookup's funnel to the next on the path
# without a second lookup: a forward branch of fewer than 30 instructions (the second lookup,
# taken where a pair of codewords does not fit the table's 12 bits) is not counted; what the
# compiler schedules between two lookups (the products, loads) is. A run whose words come from
# the blob (global loads: a tile of more than the staged words) is marked "blob", one reading
# the warp's staged words "staged".
import re
import sys

FUNNEL = re.compile(r'SHF\.R\.W\.U32 R\d+, R\d+, R\d+, R\d+$')
BRANCH = re.compile(r'@!?U?P\d BRA `\((\.L_x_\d+)\)')


def kernels(path):
    """{(NB, helpers): [instruction or 'LABEL name', ...]} of every compact_gemm_kernel."""
    out, key = {}, None
    for line in open(path):
        if line.startswith('.text.'):
            m = re.search(r'compact_gemm_kernelILj(\d+)ELb(\d)', line)
            key = (int(m.group(1)), m.group(2) == '1') if m else None
            if key:
                out[key] = []
            continue
        if key is None:
            continue
        m = re.match(r'\s+/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;', line)
        if m:
            out[key].append(m.group(1))
            continue
        m = re.match(r'^(\.L_x_\d+):', line)
        if m:
            out[key].append('LABEL ' + m.group(1))
    return out


def common_path(code, a, b):
    """Instructions in code[a:b], skipping short forward branches' bodies."""
    n, i, skip = 0, a, None
    while i < b:
        x = code[i]
        if skip is not None:
            if x == 'LABEL ' + skip:
                skip = None
            i += 1
            continue
        m = BRANCH.match(x)
        if m and 'LABEL ' + m.group(1) in code[i:i + 30]:
            skip = m.group(1)
        if not x.startswith('LABEL'):
            n += 1
        i += 1
    return n


def main():
    for (nb, helpers), code in sorted(kernels(sys.argv[1]).items()):
        funnels = [i for i, x in enumerate(code) if FUNNEL.match(x)]
        runs, cur = [], funnels[:1]
        for a, b in zip(funnels, funnels[1:]):
            if b - a < 60:
                cur.append(b)
            else:
                runs.append(cur)
                cur = [b]
        runs.append(cur)
        total = sum(1 for x in code if not x.startswith('LABEL'))
        print(f'compact_gemm_kernel<{nb}, {str(helpers).lower()}>: {total} SASS instructions')
        for run in runs:
            if len(run) < 8:
                continue
            per = [common_path(code, a, b) for a, b in zip(run, run[1:])]
            source = 'blob' if any('LDG' in x for x in code[run[0]:run[-1]]) else 'staged'
            print(f'  {len(run)} lookups ({source} words): {sum(per) / len(per):.1f} '
                  f'instructions a lookup on the common path ({", ".join(map(str, per))})')


if __name__ == '__main__':
    main()
