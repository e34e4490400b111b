// kernel @fused_0 domain [32]
//   from fused %0
//   from reduce_logsumexp %0
//   from sub %1
//   from add %2
//   from sub %3
//   from exp %4
extern "C" __global__ void k0_fused_0(const float* b0, float* b1, long long n) {
  long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  long long v0 = p;
  long long v2 = 0LL;
  long long v3 = 100LL;
  long long v4 = (long long)((unsigned long long)v0 * (unsigned long long)v3);
  float v7 = (-__uint_as_float(0x7f800000u));
  float v8 = 0.0f;
  float v17 = 1.0f;
  float v10 = v7;
  float v11 = v8;
  for (long long v9 = 0; v9 < 100; ++v9) {
    long long v12 = (long long)((unsigned long long)v4 + (unsigned long long)v9);
    float v13 = b0[v12];
    float v14 = v10 != v10 || v13 != v13 ? v10 + v13 : v13 > v10 ? v13 : v10;
    float v15 = v10 - v14;
    float v16 = expf(v15);
    unsigned char v18 = (unsigned char)(v10 == v14);
    float v19 = v18 ? v17 : v16;
    float v20 = v13 - v14;
    float v21 = expf(v20);
    unsigned char v22 = (unsigned char)(v13 == v14);
    float v23 = v22 ? v17 : v21;
    float v24 = v11 * v19;
    float v25 = v23 + v24;
    v10 = v14;
    v11 = v25;
  }
  float v26 = v10;
  float v27 = v11;
  float v28 = logf(v27);
  float v29 = v26 + v28;
  float v30 = v29 - v29;
  float v31 = v29 + v30;
  for (long long v1 = 0; v1 < 100; ++v1) {
    long long v5 = (long long)((unsigned long long)v1 + (unsigned long long)v4);
    float v6 = b0[v5];
    float v32 = v6 - v31;
    float v33 = expf(v32);
    b1[v5] = v33;
  }
}
