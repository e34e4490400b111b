// kernel @fused_0 domain [64, 128]
//   from fused %0
//   from add %0
//   from tanh %1
//   from mul %2
//   from relu %3
__kernel void k0_fused_0(__global const float* b0, long b0_off, __global const float* b1, long b1_off, __global float* b2, long b2_off, long n) {
  long p = get_global_id(0);
  if (p >= n) return;
  b0 += b0_off;
  b1 += b1_off;
  b2 += b2_off;
  long v0 = p / 128;
  long v1 = (p) % 128;
  long v3 = 128L;
  long v4 = (long)((ulong)v0 * (ulong)v3);
  long v5 = (long)((ulong)v1 + (ulong)v4);
  float v6 = b0[v5];
  float v7 = b1[v1];
  float v8 = v6 + v7;
  float v9 = tanh(v8);
  float v10 = v6 * v9;
  float v11 = 0.0f;
  uchar v12 = (uchar)(v10 > v11);
  uchar v13 = (uchar)(v10 != v10);
  uchar v14 = (uchar)((v12 | v13) != 0);
  float v15 = v14 ? v10 : v11;
  b2[v5] = v15;
}
