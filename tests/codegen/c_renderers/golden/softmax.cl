// kernel @fused_0 domain [32]
//   from fused %0
//   from reduce_logsumexp %0
//   from sub %1
//   from add %2
//   from sub %3
//   from exp %4
__kernel void k0_fused_0(__global const float* b0, long b0_off, __global float* b1, long b1_off, long n) {
  long p = get_global_id(0);
  if (p >= n) return;
  b0 += b0_off;
  b1 += b1_off;
  long v0 = p;
  long v2 = 0L;
  long v3 = 100L;
  long v4 = (long)((ulong)v0 * (ulong)v3);
  float v7 = (-as_float(0x7f800000u));
  float v8 = 0.0f;
  float v17 = 1.0f;
  float v10 = v7;
  float v11 = v8;
  for (long v9 = 0; v9 < 100; ++v9) {
    long v12 = (long)((ulong)v4 + (ulong)v9);
    float v13 = b0[v12];
    float v14 = v10 != v10 || v13 != v13 ? v10 + v13 : v13 > v10 ? v13 : v10;
    float v15 = v10 - v14;
    float v16 = exp(v15);
    uchar v18 = (uchar)(v10 == v14);
    float v19 = v18 ? v17 : v16;
    float v20 = v13 - v14;
    float v21 = exp(v20);
    uchar v22 = (uchar)(v13 == v14);
    float v23 = v22 ? v17 : v21;
    float v24 = v11 * v19;
    float v25 = v23 + v24;
    v10 = v14;
    v11 = v25;
  }
  float v26 = v10;
  float v27 = v11;
  float v28 = log(v27);
  float v29 = v26 + v28;
  float v30 = v29 - v29;
  float v31 = v29 + v30;
  for (long v1 = 0; v1 < 100; ++v1) {
    long v5 = (long)((ulong)v1 + (ulong)v4);
    float v6 = b0[v5];
    float v32 = v6 - v31;
    float v33 = exp(v32);
    b1[v5] = v33;
  }
}
