// kernel @fused_0 domain [32]
//   from fused %0
//   from reduce_max %0
//   from sub %1
//   from exp %2
//   from reduce_sum %3
//   from div %4
extern "C" __global__ void k0_fused_0(const float* b0, float* b1, long long n) {
  __shared__ float smelt_red_float[8];
  long long p = (long long)blockIdx.x;
  long long tid = (long long)threadIdx.x;
  const int lanes = warpSize < 256 ? warpSize : 256;
  long long v0 = p;
  long long v3 = 1000LL;
  long long v4 = (long long)((unsigned long long)v0 * (unsigned long long)v3);
  float v7 = (-__uint_as_float(0x7f800000u));
  float v9 = tid == 0 ? v7 : (-__uint_as_float(0x7f800000u));
  for (long long v8 = tid; v8 < 1000; v8 += 256) {
    long long v10 = (long long)((unsigned long long)v4 + (unsigned long long)v8);
    float v11 = b0[v10];
    float v12 = v9 != v9 || v11 != v11 ? v9 + v11 : v11 > v9 ? v11 : v9;
    v9 = v12;
  }
  for (int s = lanes / 2; s > 0; s >>= 1) {
    float v9_o = (float)__shfl_down(v9, s, lanes);
    v9 = v9 != v9 || v9_o != v9_o ? v9 + v9_o : v9_o > v9 ? v9_o : v9;
  }
  if (tid % lanes == 0) smelt_red_float[tid / lanes] = v9;
  __syncthreads();
  if (tid < lanes) {
    v9 = tid < 256 / lanes ? smelt_red_float[tid] : (-__uint_as_float(0x7f800000u));
    for (int s = lanes / 2; s > 0; s >>= 1) {
      float v9_o = (float)__shfl_down(v9, s, lanes);
      v9 = v9 != v9 || v9_o != v9_o ? v9 + v9_o : v9_o > v9 ? v9_o : v9;
    }
    if (tid == 0) smelt_red_float[0] = v9;
  }
  __syncthreads();
  float v13 = smelt_red_float[0];
  __syncthreads();
  float v16 = 0.0f;
  float v18 = tid == 0 ? v16 : 0.0f;
  for (long long v17 = tid; v17 < 1000; v17 += 256) {
    long long v19 = (long long)((unsigned long long)v4 + (unsigned long long)v17);
    float v20 = b0[v19];
    float v21 = v20 - v13;
    float v22 = expf(v21);
    float v23 = v18 + v22;
    b1[v19] = v22;
    v18 = v23;
  }
  for (int s = lanes / 2; s > 0; s >>= 1) {
    float v18_o = (float)__shfl_down(v18, s, lanes);
    v18 = v18 + v18_o;
  }
  if (tid % lanes == 0) smelt_red_float[tid / lanes] = v18;
  __syncthreads();
  if (tid < lanes) {
    v18 = tid < 256 / lanes ? smelt_red_float[tid] : 0.0f;
    for (int s = lanes / 2; s > 0; s >>= 1) {
      float v18_o = (float)__shfl_down(v18, s, lanes);
      v18 = v18 + v18_o;
    }
    if (tid == 0) smelt_red_float[0] = v18;
  }
  __syncthreads();
  float v24 = smelt_red_float[0];
  __syncthreads();
  float v27 = 1.0f;
  float v28 = v27 / v24;
  for (long long v1 = tid; v1 < 1000; v1 += 256) {
    long long v5 = (long long)((unsigned long long)v1 + (unsigned long long)v4);
    float v26 = b1[v5];
    float v25 = v26 * v28;
    b1[v5] = v25;
  }
}
