// kernel @fused_0 domain []
//   from fused %0
//   from mul %0
//   from reduce_sum %1
//   from rsqrt %2
//   from mul %3
//   from add %4
extern "C" __global__ void k0_fused_0(const float* b0, const float* b1, float* b2, float* b3, long long n) {
  __shared__ float smelt_red_float[9];
  long long p = (long long)blockIdx.x;
  long long tid = (long long)threadIdx.x;
  const int lanes = warpSize < 256 ? warpSize : 256;
  float v0 = 0.0f;
  float v2 = tid == 0 ? v0 : 0.0f;
  float smelt_row0[16];
  #pragma unroll
  for (int rv1 = 0; rv1 < 16; ++rv1) {
    long long v1 = tid + (long long)rv1 * 256;
    float v3 = b0[v1];
    smelt_row0[rv1] = v3;
    float v4 = v3 * v3;
    float v5 = v4 + v2;
    v2 = v5;
  }
  for (int s = lanes / 2; s > 0; s >>= 1) {
    float v2_o = (float)__shfl_down(v2, s, lanes);
    v2 = v2 + v2_o;
  }
  if (tid % lanes == 0) smelt_red_float[tid / lanes] = v2;
  __syncthreads();
  if (tid < lanes) {
    v2 = tid < 256 / lanes ? smelt_red_float[tid] : 0.0f;
    for (int s = lanes / 2; s > 0; s >>= 1) {
      float v2_o = (float)__shfl_down(v2, s, lanes);
      v2 = v2 + v2_o;
    }
    if (tid == 0) smelt_red_float[8] = v2;
  }
  __syncthreads();
  float v6 = smelt_red_float[8];
  long long v7 = 0LL;
  b2[v7] = v6;
  float v8 = 1.0f / sqrtf(v6);
  #pragma unroll
  for (int rv9 = 0; rv9 < 16; ++rv9) {
    long long v9 = tid + (long long)rv9 * 256;
    float v10 = b1[v9];
    float v11 = smelt_row0[rv9];
    float v12 = v8 * v11;
    float v13 = v10 + v12;
    b3[v9] = v13;
  }
}
