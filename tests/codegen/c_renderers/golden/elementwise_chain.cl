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
  long v2 = 128L;
  long v3 = (long)((ulong)v0 * (ulong)v2);
  long v4 = (long)((ulong)v3 + (ulong)v1);
  float v5 = b1[v1];
  float v6 = b0[v4];
  float v7 = v5 + v6;
  float v8 = tanh(v7);
  float v9 = v8 * v6;
  float v10 = 0.0f;
  uchar v11 = (uchar)(v9 > v10);
  uchar v12 = (uchar)(v9 != v9);
  uchar v13 = (uchar)((v11 | v12) != 0);
  float v14 = v13 ? v9 : v10;
  b2[v4] = v14;
}
