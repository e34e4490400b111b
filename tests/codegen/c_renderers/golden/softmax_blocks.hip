// kernel @fused_0 domain [32]
//   from fused %0
//   from reduce_max %0
//   from sub %1
//   from exp %2
//   from reduce_sum %3
//   from div %4
extern "C" __global__ void k0_fused_0(const float* b0, float* b1, long long n) {
  __shared__ float smelt_red_float[9];
  long long p = (long long)blockIdx.x;
  long long tid = (long long)threadIdx.x;
  const int lanes = warpSize < 256 ? warpSize : 256;
  long long v0 = p;
  float v1 = (-__uint_as_float(0x7f800000u));
  long long v2 = 1000LL;
  long long v3 = (long long)((unsigned long long)v0 * (unsigned long long)v2);
  float v5 = tid == 0 ? v1 : (-__uint_as_float(0x7f800000u));
  for (long long v4 = tid; v4 < 1000; v4 += 256) {
    long long v6 = (long long)((unsigned long long)v3 + (unsigned long long)v4);
    float v7 = b0[v6];
    float v8 = v7 != v7 || v5 != v5 ? v7 + v5 : v5 > v7 ? v5 : v7;
    v5 = v8;
  }
  for (int s = lanes / 2; s > 0; s >>= 1) {
    float v5_o = (float)__shfl_down(v5, s, lanes);
    v5 = v5 != v5 || v5_o != v5_o ? v5 + v5_o : v5_o > v5 ? v5_o : v5;
  }
  if (tid % lanes == 0) smelt_red_float[tid / lanes] = v5;
  __syncthreads();
  if (tid < lanes) {
    v5 = tid < 256 / lanes ? smelt_red_float[tid] : (-__uint_as_float(0x7f800000u));
    for (int s = lanes / 2; s > 0; s >>= 1) {
      float v5_o = (float)__shfl_down(v5, s, lanes);
      v5 = v5 != v5 || v5_o != v5_o ? v5 + v5_o : v5_o > v5 ? v5_o : v5;
    }
    if (tid == 0) smelt_red_float[8] = v5;
  }
  __syncthreads();
  float v9 = smelt_red_float[8];
  float v10 = 0.0f;
  float v12 = tid == 0 ? v10 : 0.0f;
  for (long long v11 = tid; v11 < 1000; v11 += 256) {
    long long v13 = (long long)((unsigned long long)v3 + (unsigned long long)v11);
    float v14 = b0[v13];
    float v15 = v14 - v9;
    float v16 = expf(v15);
    float v17 = v12 + v16;
    v12 = v17;
  }
  for (int s = lanes / 2; s > 0; s >>= 1) {
    float v12_o = (float)__shfl_down(v12, s, lanes);
    v12 = v12 + v12_o;
  }
  if (tid % lanes == 0) smelt_red_float[tid / lanes] = v12;
  __syncthreads();
  if (tid < lanes) {
    v12 = tid < 256 / lanes ? smelt_red_float[tid] : 0.0f;
    for (int s = lanes / 2; s > 0; s >>= 1) {
      float v12_o = (float)__shfl_down(v12, s, lanes);
      v12 = v12 + v12_o;
    }
    if (tid == 0) smelt_red_float[8] = v12;
  }
  __syncthreads();
  float v18 = smelt_red_float[8];
  float v19 = 1.0f;
  float v20 = v19 / v18;
  for (long long v21 = tid; v21 < 1000; v21 += 256) {
    long long v22 = (long long)((unsigned long long)v21 + (unsigned long long)v3);
    float v23 = b0[v22];
    float v24 = v23 - v9;
    float v25 = expf(v24);
    float v26 = v25 * v20;
    b1[v22] = v26;
  }
}
