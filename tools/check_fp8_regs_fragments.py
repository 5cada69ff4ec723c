#!/usr/bin/env python3
"""Desk check of the FP8 decode kernel's register-fragment index maps (kv_fp8_frag.cuh,
kv_fp8_tile.cuh's code_tile_offset, attention_decode.cu's output store), without a GPU.

It simulates, in exact arithmetic, what the PTX instructions the kernel uses give each lane
(ldmatrix.x4 b16 on a tile of codes, the pairing of e4m3x4_to_pairs, mma.m16n8k16's A / B / C
fragments, movmatrix.trans), with the same index expressions as the CUDA code transcribed here,
and checks that S = Q K^T and O = P V come out whole for head dims 64, 128 and 256, that the 8 rows
of every ldmatrix matrix sit in 8 different 16-byte bank groups, and that the bit decode of all
256 codes equals the E4M3 values (NaN codes: +-480). It checks the maps as transcribed, not the
compiled kernel: cuda_fp8_kv_test does that on the GPU (run it with SEAM_DECODE_FP8_REGS=1).
Run: python3 tools/check_fp8_regs_fragments.py
"""
import random
import struct

random.seed(1)
class M:
  def __init__(s,r,c,v=0.0): s.r,s.c=r,c; s.a=[[v]*c for _ in range(r)]
  def __getitem__(s,k):
    i,j=k
    if isinstance(j,slice): return s.a[i][j]
    return s.a[i][j]
  def __setitem__(s,k,v): i,j=k; s.a[i][j]=v
def rnd(lo,hi,r,c):
  m=M(r,c); m.a=[[float(random.randint(lo,hi-1)) for _ in range(c)] for _ in range(r)]; return m
def mm(A,B):
  R=M(A.r,B.c)
  for i in range(A.r):
    for j in range(B.c): R.a[i][j]=sum(A.a[i][k]*B.a[k][j] for k in range(A.c))
  return R
def T(A):
  R=M(A.c,A.r)
  for i in range(A.r):
    for j in range(A.c): R.a[j][i]=A.a[i][j]
  return R
def eq(A,B): return A.a==B.a
D=128
for D in (64,128,256):
  def off(row,chunk):
    if D%128==0: return row*D+((chunk^(row&7))<<4)
    return row*D+((chunk^((row>>1)&3))<<4)
  K=rnd(-50,50,16,D)
  V=rnd(-50,50,16,D)
  Q=rnd(-50,50,16,D)
  P=rnd(-5,5,16,16)
  def smem(T):
    m=[None]*(16*D)
    for r in range(16):
      for c in range(D//16):
        m[off(r,c):off(r,c)+16]=T.a[r][c*16:c*16+16]
    return m
  Ks,Vs=smem(K),smem(V)
  # bank check for ldmatrix rows (8 rows of one matrix): 16B units mod 8 distinct
  for p in range(D//32):
    for m in range(4):
      units=[(off((m&1)*8+r, 2*p+(m>>1))//16)%8 for r in range(8)]
      assert len(set(units))==8,(D,units)
  def ldm_x4(S,p):
    addr=[off(((L>>3)&1)*8+(L&7), 2*p+((L>>3)>>1)) for L in range(32)]
    out=[[None]*4 for _ in range(32)]
    for m in range(4):
      for l in range(32):
        a=addr[8*m+l//4]; b=4*(l%4)
        out[l][m]=S[a+b:a+b+4]  # 4 codes
    return out
  def pairs(x): return (x[0],x[2]),(x[1],x[3])
  def mma(C,a,b):  # per-lane fragments -> matrices
    A=M(16,16);B=M(16,8)
    for l in range(32):
      g,t=l//4,l%4
      A[g,2*t],A[g,2*t+1]=a[l][0];A[g+8,2*t],A[g+8,2*t+1]=a[l][1]
      A[g,2*t+8],A[g,2*t+9]=a[l][2];A[g+8,2*t+8],A[g+8,2*t+9]=a[l][3]
      B[2*t,g],B[2*t+1,g]=b[l][0];B[2*t+8,g],B[2*t+9,g]=b[l][1]
    R=mm(A,B)
    for l in range(32):
      g,t=l//4,l%4
      C[l]=[C[l][0]+R[g,2*t],C[l][1]+R[g,2*t+1],C[l][2]+R[g+8,2*t],C[l][3]+R[g+8,2*t+1]]
  def trans(fr):
    Mx=M(8,8)
    for l in range(32):
      g,t=l//4,l%4; Mx[g,2*t],Mx[g,2*t+1]=fr[l]
    return [(Mx[2*(l%4),l//4],Mx[2*(l%4)+1,l//4]) for l in range(32)]
  # Q fragments permuted
  qf=[]
  for ks in range(D//16):
    f=[]
    for l in range(32):
      g,t=l//4,l%4;c=ks*16+4*t
      lo=Q.a[g][c:c+4];hi=Q.a[g+8][c:c+4]
      f.append(((lo[0],lo[2]),(hi[0],hi[2]),(lo[1],lo[3]),(hi[1],hi[3])))
    qf.append(f)
  s=[[[0.0]*4 for _ in range(32)] for _ in range(2)]
  for p in range(D//32):
    r=ldm_x4(Ks,p)
    for m in range(4):
      b=[pairs(r[l][m]) for l in range(32)]
      mma(s[m&1],qf[2*p+(m>>1)],b)
  S=M(16,16)
  for n in range(2):
    for l in range(32):
      g,t=l//4,l%4
      S[g,n*8+2*t],S[g,n*8+2*t+1],S[g+8,n*8+2*t],S[g+8,n*8+2*t+1]=s[n][l]
  assert eq(S,mm(Q,T(K))),D
  # PV
  pa=[((P[l//4,2*(l%4)],P[l//4,2*(l%4)+1]),(P[l//4+8,2*(l%4)],P[l//4+8,2*(l%4)+1]),(P[l//4,2*(l%4)+8],P[l//4,2*(l%4)+9]),(P[l//4+8,2*(l%4)+8],P[l//4+8,2*(l%4)+9])) for l in range(32)]
  o=[[[0.0]*4 for _ in range(32)] for _ in range(D//8)]
  for p in range(D//32):
    r=ldm_x4(Vs,p)
    for h in range(2):
      j=2*p+h
      a=[pairs(r[l][2*h]) for l in range(32)]; bb=[pairs(r[l][2*h+1]) for l in range(32)]
      mma(o[2*j],pa,list(zip(trans([x[0] for x in a]),trans([x[0] for x in bb]))))
      mma(o[2*j+1],pa,list(zip(trans([x[1] for x in a]),trans([x[1] for x in bb]))))
  O=M(16,D,None)
  for n in range(D//8):
    for l in range(32):
      g,t=l//4,l%4
      for e in range(4):
        d=16*(n>>1)+4*t+2*(e&1)+(n&1)
        O[g+8*(e>>1),d]=o[n][l][e]
  assert eq(O,mm(P,V)),D
  print("fragments ok, head dim", D)


def e4m3(c):
  s = -1.0 if c & 0x80 else 1.0
  e, m = (c >> 3) & 15, c & 7
  if e == 15 and m == 7:
    return float('nan')
  return s * (2.0**-6 * m / 8 if e == 0 else 2.0**(e - 7) * (1 + m / 8))


def bf16(b): return struct.unpack('<f', struct.pack('<I', b << 16))[0]
def f16(b): return struct.unpack('<e', struct.pack('<H', b))[0]


for name, shift, val, scale in (('bf16', 4, bf16, 2.0**120), ('f16', 1, f16, 2.0**8)):
  for w in range(0, 256, 4):
    x = w | (w + 1) << 8 | (w + 2) << 16 | (w + 3) << 24
    x8 = (x << 8) & 0xffffffff
    r02 = (x8 & 0x80008000) | ((x8 & 0x7f007f00) >> shift)
    r13 = (x & 0x80008000) | ((x & 0x7f007f00) >> shift)
    got = {w: val(r02 & 0xffff) * scale, w + 2: val(r02 >> 16) * scale,
           w + 1: val(r13 & 0xffff) * scale, w + 3: val(r13 >> 16) * scale}
    for c, v in got.items():
      ref = e4m3(c)
      assert (abs(v) == 480) if ref != ref else v == ref, (name, c, v, ref)
  print("bit decode ok,", name)
