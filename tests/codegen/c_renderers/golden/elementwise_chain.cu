// kernel @fused_0 domain [64, 128]
//   from fused %0
//   from add %0
//   from tanh %1
//   from mul %2
//   from relu %3
extern "C" __global__ void k0_fused_0(const float* b0, const float* b1, float* b2, long long n) {
  long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (p >= n) return;
  long long v0 = p / 128;
  long long v1 = (p) % 128;
  long long v3 = 128LL;
  long long v4 = (long long)((unsigned long long)v0 * (unsigned long long)v3);
  long long v5 = (long long)((unsigned long long)v1 + (unsigned long long)v4);
  float v6 = b0[v5];
  float v7 = b1[v1];
  float v8 = v6 + v7;
  float v9 = tanhf(v8);
  float v10 = v6 * v9;
  float v11 = 0.0f;
  unsigned char v12 = (unsigned char)(v10 > v11);
  unsigned char v13 = (unsigned char)(v10 != v10);
  unsigned char v14 = (unsigned char)((v12 | v13) != 0);
  float v15 = v14 ? v10 : v11;
  b2[v5] = v15;
}
