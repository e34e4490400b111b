// kernel @fused_0 domain [32]
//   from fused %0
//   from reduce_max %0
//   from sub %1
//   from exp %2
//   from reduce_sum %3
//   from div %4
__kernel void k0_fused_0(__global const float* b0, long b0_off, __global float* b1, long b1_off, long n) {
  long p = get_global_id(0);
  if (p >= n) return;
  b0 += b0_off;
  b1 += b1_off;
  long v0 = p;
  float v1 = (-as_float(0x7f800000u));
  long v2 = 100L;
  long v3 = (long)((ulong)v2 * (ulong)v0);
  float v5 = v1;
  for (long v4 = 0; v4 < 100; ++v4) {
    long v6 = (long)((ulong)v3 + (ulong)v4);
    float v7 = b0[v6];
    float v8 = v7 != v7 || v5 != v5 ? v7 + v5 : v5 > v7 ? v5 : v7;
    v5 = v8;
  }
  float v9 = v5;
  float v10 = 0.0f;
  float v12 = v10;
  for (long v11 = 0; v11 < 100; ++v11) {
    long v13 = (long)((ulong)v3 + (ulong)v11);
    float v14 = b0[v13];
    float v15 = v14 - v9;
    float v16 = exp(v15);
    b1[v13] = v16;
    float v17 = v12 + v16;
    v12 = v17;
  }
  float v18 = v12;
  float v19 = 1.0f;
  float v20 = v19 / v18;
  for (long v21 = 0; v21 < 100; ++v21) {
    long v22 = (long)((ulong)v21 + (ulong)v3);
    float v23 = b1[v22];
    float v24 = v23 * v20;
    b1[v22] = v24;
  }
}
