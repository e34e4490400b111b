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
  long long v2 = 128LL;
  long long v3 = (long long)((unsigned long long)v0 * (unsigned long long)v2);
  long long v4 = (long long)((unsigned long long)v3 + (unsigned long long)v1);
  float v5 = b1[v1];
  float v6 = b0[v4];
  float v7 = v5 + v6;
  float v8 = tanhf(v7);
  float v9 = v8 * v6;
  float v10 = 0.0f;
  unsigned char v11 = (unsigned char)(v9 > v10);
  unsigned char v12 = (unsigned char)(v9 != v9);
  unsigned char v13 = (unsigned char)((v11 | v12) != 0);
  float v14 = v13 ? v9 : v10;
  b2[v4] = v14;
}
