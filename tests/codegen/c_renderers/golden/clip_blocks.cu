// kernel @fused_0 domain []
//   from fused %0
//   from mul %0
//   from reduce_sum %1
//   from rsqrt %2
//   from mul %3
//   from add %4
extern "C" __global__ void k0_fused_0(const float* b0, const float* b1, float* b2, float* b3, long long n) {
  __shared__ float smelt_red_float[8];
  long long p = (long long)blockIdx.x;
  long long tid = (long long)threadIdx.x;
  const int lanes = 32 < 256 ? 32 : 256;
  float v0 = 0.0f;
  long long v3 = 0LL;
  float v2 = tid == 0 ? v0 : 0.0f;
  for (long long v1 = tid; v1 < 4096; v1 += 256) {
    float v4 = b0[v1];
    float v5 = v4 * v4;
    float v6 = v2 + v5;
    v2 = v6;
  }
  for (int s = lanes / 2; s > 0; s >>= 1) {
    float v2_o = (float)__shfl_down_sync(0xffffffffu, v2, s, lanes);
    v2 = v2 + v2_o;
  }
  if (tid % lanes == 0) smelt_red_float[tid / lanes] = v2;
  __syncthreads();
  if (tid < lanes) {
    v2 = tid < 256 / lanes ? smelt_red_float[tid] : 0.0f;
    for (int s = lanes / 2; s > 0; s >>= 1) {
      float v2_o = (float)__shfl_down_sync(0xffffffffu, v2, s, lanes);
      v2 = v2 + v2_o;
    }
    if (tid == 0) smelt_red_float[0] = v2;
  }
  __syncthreads();
  float v7 = smelt_red_float[0];
  __syncthreads();
  b2[v3] = v7;
  float v11 = 1.0f / sqrtf(v7);
  for (long long v8 = tid; v8 < 4096; v8 += 256) {
    float v9 = b1[v8];
    float v10 = b0[v8];
    float v12 = v10 * v11;
    float v13 = v9 + v12;
    b3[v8] = v13;
  }
}
