# Which pipe does cvt.rn.f16x2.e4m3x2 (SASS F2FP.F16.E4M3.UNPACK_B) issue on, and at what rate,
# against prmt and lop3 (ALU) and mul.f16x2 (FMA)? Eight independent chains a thread, each op
# feeding the next; variants mix two kinds to see whether they co-issue.
import torch, triton, triton.language as tl, sys

OPS = {
    "prmt": ("prmt.b32 $0, $1, 0, 0x1404;", 1),
    "lop3": ("lop3.b32 $0, $1, 0x8E8E8E8E, 0x13572468, 0x6A;", 1),
    "cvt":  ("{ .reg .b16 l, h; mov.b32 {l, h}, $1; cvt.rn.f16x2.e4m3x2 $0, l; }", 1),
    "cvthi":  ("{ .reg .b16 l, h; mov.b32 {l, h}, $1; cvt.rn.f16x2.e4m3x2 $0, h; }", 1),
    "hmul": ("{ .reg .b32 s; mov.b32 s, 0x3C013C01; mul.rn.f16x2 $0, $1, s; }", 1),
    "shf":  ("shr.b32 $0, $1, 3;", 1),
}

def make(kinds):
    body = "\n".join(OPS[k][0] for k in kinds)
    return body

@triton.jit
def probe(X, Y, ITERS: tl.constexpr, A0: tl.constexpr, A1: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * 256 + tl.arange(0, 256)
    x0 = tl.load(X + offs)
    x1 = x0 ^ 0x11111111
    x2 = x0 ^ 0x22222222
    x3 = x0 ^ 0x33333333
    x4 = x0 ^ 0x44444444
    x5 = x0 ^ 0x55555555
    x6 = x0 ^ 0x66666666
    x7 = x0 ^ 0x77777777
    for i in range(ITERS):
        x0 = tl.inline_asm_elementwise(A0, "=r,r", [x0], dtype=tl.int32, is_pure=True, pack=1)
        x1 = tl.inline_asm_elementwise(A1, "=r,r", [x1], dtype=tl.int32, is_pure=True, pack=1)
        x2 = tl.inline_asm_elementwise(A0, "=r,r", [x2], dtype=tl.int32, is_pure=True, pack=1)
        x3 = tl.inline_asm_elementwise(A1, "=r,r", [x3], dtype=tl.int32, is_pure=True, pack=1)
        x4 = tl.inline_asm_elementwise(A0, "=r,r", [x4], dtype=tl.int32, is_pure=True, pack=1)
        x5 = tl.inline_asm_elementwise(A1, "=r,r", [x5], dtype=tl.int32, is_pure=True, pack=1)
        x6 = tl.inline_asm_elementwise(A0, "=r,r", [x6], dtype=tl.int32, is_pure=True, pack=1)
        x7 = tl.inline_asm_elementwise(A1, "=r,r", [x7], dtype=tl.int32, is_pure=True, pack=1)
    tl.store(Y + offs, x0 ^ x1 ^ x2 ^ x3 ^ x4 ^ x5 ^ x6 ^ x7)


PERMUTE = """{
.reg .b32 e0, e1, o0, o1, p0, p1, p2, p3, s; mov.b32 s, 0x3C013C01;
shl.b32 e0, $5, 4; and.b32 e0, e0, 0x80808080; shl.b32 e1, $5, 1; and.b32 e1, e1, 0x0E0E0E0E; or.b32 e0, e0, e1;
and.b32 o0, $5, 0x80808080; shr.b32 o1, $5, 3; and.b32 o1, o1, 0x0E0E0E0E; or.b32 o0, o0, o1;
prmt.b32 p0, e0, 0, 0x1404; prmt.b32 p1, e0, 0, 0x3424; prmt.b32 p2, o0, 0, 0x1404; prmt.b32 p3, o0, 0, 0x3424;
fma.rn.f16x2 $1, p0, s, $6; fma.rn.f16x2 $2, p1, s, $7;
fma.rn.f16x2 $3, p2, s, $8; fma.rn.f16x2 $4, p3, s, $9;
mad.lo.u32 $0, $5, 0x01000193, 0x1E3779B9;
}"""
UNPACK = """{
.reg .b32 e0, e1, o0, o1, p0, p1, p2, p3, s; mov.b32 s, 0x3C013C01; .reg .b16 el, eh, ol, oh;
shl.b32 e0, $5, 4; and.b32 e0, e0, 0x80808080; shl.b32 e1, $5, 2; and.b32 e1, e1, 0x1C1C1C1C; or.b32 e0, e0, e1;
and.b32 o0, $5, 0x80808080; shr.b32 o1, $5, 2; and.b32 o1, o1, 0x1C1C1C1C; or.b32 o0, o0, o1;
mov.b32 {el, eh}, e0; mov.b32 {ol, oh}, o0;
cvt.rn.f16x2.e4m3x2 p0, el; cvt.rn.f16x2.e4m3x2 p1, eh; cvt.rn.f16x2.e4m3x2 p2, ol; cvt.rn.f16x2.e4m3x2 p3, oh;
fma.rn.f16x2 $1, p0, s, $6; fma.rn.f16x2 $2, p1, s, $7;
fma.rn.f16x2 $3, p2, s, $8; fma.rn.f16x2 $4, p3, s, $9;
mad.lo.u32 $0, $5, 0x01000193, 0x1E3779B9;
}"""

@triton.jit
def codec(X, Y, ITERS: tl.constexpr, A: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * 256 + tl.arange(0, 256)
    w0 = tl.load(X + offs)
    w1 = w0 ^ 0x5A5A5A5A
    a0 = w0 & 0; a1 = a0; a2 = a0; a3 = a0
    b0 = a0; b1 = a0; b2 = a0; b3 = a0
    for i in range(ITERS):
        w0, a0, a1, a2, a3 = tl.inline_asm_elementwise(A, "=r,=r,=r,=r,=r,r,r,r,r,r", [w0, a0, a1, a2, a3],
                                                       dtype=(tl.int32,) * 5, is_pure=True, pack=1)
        w1, b0, b1, b2, b3 = tl.inline_asm_elementwise(A, "=r,=r,=r,=r,=r,r,r,r,r,r", [w1, b0, b1, b2, b3],
                                                       dtype=(tl.int32,) * 5, is_pure=True, pack=1)
    tl.store(Y + offs, w0 ^ w1 ^ a0 ^ a1 ^ a2 ^ a3 ^ b0 ^ b1 ^ b2 ^ b3)

def codecs(X, Y, progs, sms):
    ITERS = 2048
    for name, asm in [("permute", PERMUTE), ("unpack", UNPACK), ("permute", PERMUTE), ("unpack", UNPACK)]:
        kern = lambda: codec[(progs,)](X, Y, ITERS=ITERS, A=asm, num_warps=8)
        kern(); torch.cuda.synchronize()
        t = triton.testing.do_bench(kern, warmup=50, rep=300)
        words = progs * 256 * ITERS * 2
        print(f"| codec {name} | {t*1e3:.1f} µs | {words / (t * 1e6) / sms / 32:.3f} warp-words/ns/SM |", flush=True)
    # correctness of the two codecs' values (same fp16 value up to the 2^8 factor)
    import numpy as np

def main():
    dev = torch.cuda.get_device_properties(0)
    sms = dev.multi_processor_count
    progs = sms * 16  # 256 threads each (8 warps): 16 CTAs = 128 warps an SM over waves
    X = torch.randint(-2**31, 2**31 - 1, (progs * 256,), dtype=torch.int32, device="cuda")
    Y = torch.empty_like(X)
    ITERS = 4096
    pairs = [("lop3", "lop3"), ("prmt", "prmt"), ("hmul", "hmul"), ("shf", "shf"), ("cvt", "cvt"), ("cvthi", "cvthi"),
             ("lop3", "cvt"), ("prmt", "cvt"), ("hmul", "cvt"), ("lop3", "prmt"), ("lop3", "hmul"), ("shf", "cvt")]
    print(f"{torch.cuda.get_device_name(0)}, {sms} SMs")
    codecs(X, Y, progs, sms)
    rows = []
    for a, b in pairs:
        kern = lambda: probe[(progs,)](X, Y, ITERS=ITERS, A0=OPS[a][0], A1=OPS[b][0], num_warps=8)
        kern(); torch.cuda.synchronize()
        t = triton.testing.do_bench(kern, warmup=50, rep=300)
        ops = progs * 256 * ITERS * 8  # thread-ops
        warp_ops = ops / 32
        # warp instructions per ns per SM
        rate = warp_ops / (t * 1e6) / sms
        rows.append((a, b, t, rate))
        print(f"| {a} + {b} | {t*1e3:.1f} µs | {rate:.3f} warp-ops/ns/SM |", flush=True)
    try:
        c = probe.warmup(X, Y, ITERS=ITERS, A0=OPS["lop3"][0], A1=OPS["cvt"][0], num_warps=8, grid=(progs,))
        ptx = c.asm["ptx"]
        print("\n".join(l for l in ptx.splitlines() if "cvt.rn.f16x2" in l or "lop3" in l)[:2000])
    except Exception as e:
        print("no ptx:", e)

main()
