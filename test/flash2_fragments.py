#!/usr/bin/env python3
# A model of kernels.cu's pf_flash2_attention_kernel fragment arithmetic (next kernels), runnable without
# a GPU: ldmatrix (.x4, .trans) and mma.m16n8k16 as the PTX ISA lays out their fragments, fed by
# the kernel's lane address formulas; checks S = Q K^T and O = P V for the head_dim/key-tile
# instances (numpy). A layout slip in the kernel shows here as an assertion.
import numpy as np
rng=np.random.default_rng(0)
def ldmatrix(smem, addr_of_lane, trans=False):
    # smem: 2D array [rows][stride] ; addr_of_lane(l) -> (row, col) of 8 consecutive elements
    regs=[[None]*4 for _ in range(32)]
    for i in range(4):
        rows=[addr_of_lane(i*8+r) for r in range(8)]
        M=np.array([smem[rr, cc:cc+8] for rr,cc in rows])  # 8x8, row r from lane i*8+r
        if trans: M=M.T
        for l in range(32):
            g,t=l>>2,l&3
            regs[l][i]=(M[g,2*t],M[g,2*t+1])
    return regs
def mma(D,A,B0,B1):
    # D[lane] 4 floats, A[lane] 4 regs pairs, B0,B1[lane] pairs
    Am=np.zeros((16,16));Bm=np.zeros((16,8))
    for l in range(32):
        g,t=l>>2,l&3
        Am[g,2*t:2*t+2]=A[l][0];Am[g+8,2*t:2*t+2]=A[l][1];Am[g,2*t+8:2*t+10]=A[l][2];Am[g+8,2*t+8:2*t+10]=A[l][3]
        Bm[2*t:2*t+2,g]=B0[l];Bm[2*t+8:2*t+10,g]=B1[l]
    C=Am@Bm
    for l in range(32):
        g,t=l>>2,l&3
        D[l][0]+=C[g,2*t];D[l][1]+=C[g,2*t+1];D[l][2]+=C[g+8,2*t];D[l][3]+=C[g+8,2*t+1]
for hd,KT in [(64,64),(80,64),(128,64),(48,64),(256,32)]:
    HD=64 if hd<=64 else 128 if hd<=128 else 256
    stride=hd+8
    Q=np.zeros((16,stride));Q[:,:hd]=rng.standard_normal((16,hd))
    K=np.zeros((KT,stride));K[:,:hd]=rng.standard_normal((KT,hd))
    V=np.zeros((KT,stride));V[:,:hd]=rng.standard_normal((KT,hd))
    s=[[[0.0]*4 for _ in range(32)] for n in range(KT//8)]
    for kk in range(HD//16):
        if kk*16>=hd: continue
        qa=ldmatrix(Q,lambda l:(l&15, kk*16+(l>>4)*8))
        for n2 in range(KT//16):
            kb=ldmatrix(K,lambda l:(n2*16+(l&7)+(l>>4)*8, kk*16+((l>>3)&1)*8))
            mma(s[2*n2],qa,[kb[l][0] for l in range(32)],[kb[l][1] for l in range(32)])
            mma(s[2*n2+1],qa,[kb[l][2] for l in range(32)],[kb[l][3] for l in range(32)])
    S=np.zeros((16,KT))
    for n in range(KT//8):
        for l in range(32):
            g,t=l>>2,l&3
            S[g,n*8+2*t]=s[n][l][0];S[g,n*8+2*t+1]=s[n][l][1];S[g+8,n*8+2*t]=s[n][l][2];S[g+8,n*8+2*t+1]=s[n][l][3]
    assert np.allclose(S,Q[:,:hd]@K[:,:hd].T), "S"
    P=rng.standard_normal((16,KT))
    # p[n][0] = row g cols n*8+2t..; p[n][1] = row g+8
    p=[[ (None,None) for _ in range(32)] for n in range(KT//8)]
    for n in range(KT//8):
        for l in range(32):
            g,t=l>>2,l&3
            p[n][l]=((P[g,n*8+2*t],P[g,n*8+2*t+1]),(P[g+8,n*8+2*t],P[g+8,n*8+2*t+1]))
    o=[[[0.0]*4 for _ in range(32)] for d in range(HD//8)]
    for k2 in range(KT//16):
        pa=[(p[2*k2][l][0],p[2*k2][l][1],p[2*k2+1][l][0],p[2*k2+1][l][1]) for l in range(32)]
        for d2 in range(HD//16):
            if d2*16>=hd: continue
            vb=ldmatrix(V,lambda l:(k2*16+(l&7)+((l>>3)&1)*8, d2*16+(l>>4)*8),trans=True)
            mma(o[2*d2],pa,[vb[l][0] for l in range(32)],[vb[l][1] for l in range(32)])
            mma(o[2*d2+1],pa,[vb[l][2] for l in range(32)],[vb[l][3] for l in range(32)])
    O=np.zeros((16,hd))
    for d in range(hd//8):
        for l in range(32):
            g,t=l>>2,l&3
            O[g,d*8+2*t:d*8+2*t+2]=o[d][l][0:2];O[g+8,d*8+2*t:d*8+2*t+2]=o[d][l][2:4]
    assert np.allclose(O,P@V[:,:hd]), "O"
    print("ok",hd,KT)
