# The lookup loops of a kernel in a binary: SASS through cuobjdump (and nvdisasm) on PATH,
# backward branches whose body has 3 STS.U8 and fewer than 40 instructions (kernel5 helper).
import re, subprocess, sys
# Usage: sass_loops.py BINARY [function-substring]
binary = sys.argv[1]; fn = sys.argv[2] if len(sys.argv) > 2 else 'decode_kernelILj1ELb0'
out = subprocess.run(['cuobjdump', '-sass', binary], capture_output=True, text=True).stdout
funcs = re.split(r'\n\s+Function : ', out)
for f in funcs:
    name = f.split('\n')[0]
    if fn not in name: continue
    ins = []
    for line in f.split('\n'):
        m = re.match(r'\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;', line)
        if m: ins.append((int(m.group(1), 16), m.group(2)))
    total = len(ins)
    loops = []
    for i, (a, op) in enumerate(ins):
        m = re.search(r'BRA (?:P\d, )?0x([0-9a-f]+)$', op)
        if m:
            tgt = int(m.group(1), 16)
            if tgt < a:
                body = [o for (x, o) in ins if tgt <= x <= a]
                sts = sum('STS.U8' in o for o in body)
                lds = sum(o.startswith('LDS') or ' LDS' in o for o in body)
                if sts >= 3 and len(body) < 40:
                    loops.append((hex(tgt), len(body), sts, lds))
    print(name[:90], 'instructions', total, 'lookup loops (start, len, STS.U8, LDS):', loops)
