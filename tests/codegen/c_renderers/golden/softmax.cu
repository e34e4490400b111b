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
  long long v3 = 100LL;
  long long v4 = (long long)((unsigned long long)v0 * (unsigned long long)v3);
  float v7 = (-__uint_as_float(0x7f800000u));
  float v9 = v7;
  for (long long v8 = 0; v8 < 100; ++v8) {
    long long v10 = (long long)((unsigned long long)v4 + (unsigned long long)v8);
    float v11 = b0[v10];
    float v12 = v9 != v9 || v11 != v11 ? v9 + v11 : v11 > v9 ? v11 : v9;
    v9 = v12;
  }
  float v13 = v9;
  float v16 = 0.0f;
  float v18 = v16;
  for (long long v17 = 0; v17 < 100; ++v17) {
    long long v19 = (long long)((unsigned long long)v4 + (unsigned long long)v17);
    float v20 = b0[v19];
    float v21 = v20 - v13;
    float v22 = expf(v21);
    float v23 = v18 + v22;
    b1[v19] = v22;
    v18 = v23;
  }
  float v24 = v18;
  float v27 = 1.0f;
  float v28 = v27 / v24;
  for (long long v1 = 0; v1 < 100; ++v1) {
    long long v5 = (long long)((unsigned long long)v1 + (unsigned long long)v4);
    float v26 = b1[v5];
    float v25 = v26 * v28;
    b1[v5] = v25;
  }
}
