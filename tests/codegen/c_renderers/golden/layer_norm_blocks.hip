// kernel @fused_0 domain [16]
//   from fused %0
//   from reduce_mean %0
//   from sub %1
//   from reduce_variance %2
//   from add %4
//   from rsqrt %5
//   from mul %6
//   from mul %7
//   from add %8
extern "C" __global__ void k0_fused_0(const float* b0, const float* b1, const float* b2, float* b3, long long n) {
  __shared__ float smelt_red_float[9];
  long long p = (long long)blockIdx.x;
  long long tid = (long long)threadIdx.x;
  const int lanes = warpSize < 256 ? warpSize : 256;
  long long v0 = p;
  float v1 = 0.0f;
  long long v2 = 1024LL;
  long long v3 = (long long)((unsigned long long)v0 * (unsigned long long)v2);
  float v5 = tid == 0 ? v1 : 0.0f;
  float smelt_row0[4];
  #pragma unroll
  for (int rv4 = 0; rv4 < 4; ++rv4) {
    long long v4 = tid + (long long)rv4 * 256;
    long long v6 = (long long)((unsigned long long)v4 + (unsigned long long)v3);
    float v7 = b0[v6];
    smelt_row0[rv4] = v7;
    float v8 = v5 + v7;
    v5 = v8;
  }
  for (int s = lanes / 2; s > 0; s >>= 1) {
    float v5_o = (float)__shfl_down(v5, s, lanes);
    v5 = v5 + v5_o;
  }
  if (tid % lanes == 0) smelt_red_float[tid / lanes] = v5;
  __syncthreads();
  if (tid < lanes) {
    v5 = tid < 256 / lanes ? smelt_red_float[tid] : 0.0f;
    for (int s = lanes / 2; s > 0; s >>= 1) {
      float v5_o = (float)__shfl_down(v5, s, lanes);
      v5 = v5 + v5_o;
    }
    if (tid == 0) smelt_red_float[8] = v5;
  }
  __syncthreads();
  float v9 = smelt_red_float[8];
  float v10 = 1024.0f;
  float v11 = v9 / v10;
  float v13 = tid == 0 ? v1 : 0.0f;
  #pragma unroll
  for (int rv12 = 0; rv12 < 4; ++rv12) {
    long long v12 = tid + (long long)rv12 * 256;
    long long v14 = (long long)((unsigned long long)v3 + (unsigned long long)v12);
    float v15 = smelt_row0[rv12];
    float v16 = v15 - v11;
    float v17 = v16 * v16;
    float v18 = v13 + v17;
    v13 = v18;
  }
  for (int s = lanes / 2; s > 0; s >>= 1) {
    float v13_o = (float)__shfl_down(v13, s, lanes);
    v13 = v13 + v13_o;
  }
  if (tid % lanes == 0) smelt_red_float[tid / lanes] = v13;
  __syncthreads();
  if (tid < lanes) {
    v13 = tid < 256 / lanes ? smelt_red_float[tid] : 0.0f;
    for (int s = lanes / 2; s > 0; s >>= 1) {
      float v13_o = (float)__shfl_down(v13, s, lanes);
      v13 = v13 + v13_o;
    }
    if (tid == 0) smelt_red_float[8] = v13;
  }
  __syncthreads();
  float v19 = smelt_red_float[8];
  float v20 = v19 / v10;
  float v21 = 1e-05f;
  float v22 = v20 + v21;
  float v23 = 1.0f / sqrtf(v22);
  #pragma unroll
  for (int rv24 = 0; rv24 < 4; ++rv24) {
    long long v24 = tid + (long long)rv24 * 256;
    long long v25 = (long long)((unsigned long long)v24 + (unsigned long long)v3);
    float v26 = b2[v24];
    float v27 = b1[v24];
    float v28 = smelt_row0[rv24];
    float v29 = v28 - v11;
    float v30 = v29 * v23;
    float v31 = v27 * v30;
    float v32 = v26 + v31;
    b3[v25] = v32;
  }
}
