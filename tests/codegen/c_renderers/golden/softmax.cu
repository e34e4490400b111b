// kernel @fused_0 domain [32]
//   from fused %0
//   from reduce_max %0
//   from sub %1
//   from exp %2
//   from reduce_sum %3
//   from div %4
extern "C" __global__ void k0_fused_0(const float* b0, float* b1, long long n) {
  long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  long long v0 = p;
  float v1 = (-__uint_as_float(0x7f800000u));
  long long v2 = 100LL;
  long long v3 = (long long)((unsigned long long)v2 * (unsigned long long)v0);
  float v5 = v1;
  for (long long v4 = 0; v4 < 100; ++v4) {
    long long v6 = (long long)((unsigned long long)v3 + (unsigned long long)v4);
    float v7 = b0[v6];
    float v8 = v7 != v7 || v5 != v5 ? v7 + v5 : v5 > v7 ? v5 : v7;
    v5 = v8;
  }
  float v9 = v5;
  float v10 = 0.0f;
  float v12 = v10;
  for (long long v11 = 0; v11 < 100; ++v11) {
    long long v13 = (long long)((unsigned long long)v3 + (unsigned long long)v11);
    float v14 = b0[v13];
    float v15 = v14 - v9;
    float v16 = expf(v15);
    b1[v13] = v16;
    float v17 = v12 + v16;
    v12 = v17;
  }
  float v18 = v12;
  float v19 = 1.0f;
  float v20 = v19 / v18;
  for (long long v21 = 0; v21 < 100; ++v21) {
    long long v22 = (long long)((unsigned long long)v21 + (unsigned long long)v3);
    float v23 = b1[v22];
    float v24 = v23 * v20;
    b1[v22] = v24;
  }
}
