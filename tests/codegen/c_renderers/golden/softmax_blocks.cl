// kernel @fused_0 domain [32]
//   from fused %0
//   from reduce_max %0
//   from sub %1
//   from exp %2
//   from reduce_sum %3
//   from div %4
__kernel void k0_fused_0(__global const float* b0, long b0_off, __global float* b1, long b1_off, long n) {
  __local float smelt_red_float[256];
  long p = (long)get_group_id(0);
  long tid = (long)get_local_id(0);
  b0 += b0_off;
  b1 += b1_off;
  long v0 = p;
  long v3 = 1000L;
  long v4 = (long)((ulong)v0 * (ulong)v3);
  float v7 = (-as_float(0x7f800000u));
  float v9 = tid == 0 ? v7 : (-as_float(0x7f800000u));
  for (long v8 = tid; v8 < 1000; v8 += 256) {
    long v10 = (long)((ulong)v4 + (ulong)v8);
    float v11 = b0[v10];
    float v12 = v9 != v9 || v11 != v11 ? v9 + v11 : v11 > v9 ? v11 : v9;
    v9 = v12;
  }
  smelt_red_float[tid] = v9;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (long s = 128; s > 0; s >>= 1) {
    if (tid < s) smelt_red_float[tid] = smelt_red_float[tid] != smelt_red_float[tid] || smelt_red_float[tid + s] != smelt_red_float[tid + s] ? smelt_red_float[tid] + smelt_red_float[tid + s] : smelt_red_float[tid + s] > smelt_red_float[tid] ? smelt_red_float[tid + s] : smelt_red_float[tid];
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  }
  float v13 = smelt_red_float[0];
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  float v16 = 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  float v18 = tid == 0 ? v16 : 0.0f;
  for (long v17 = tid; v17 < 1000; v17 += 256) {
    long v19 = (long)((ulong)v4 + (ulong)v17);
    float v20 = b0[v19];
    float v21 = v20 - v13;
    float v22 = exp(v21);
    float v23 = v18 + v22;
    b1[v19] = v22;
    v18 = v23;
  }
  smelt_red_float[tid] = v18;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (long s = 128; s > 0; s >>= 1) {
    if (tid < s) smelt_red_float[tid] = smelt_red_float[tid] + smelt_red_float[tid + s];
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  }
  float v24 = smelt_red_float[0];
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  float v27 = 1.0f;
  float v28 = v27 / v24;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (long v1 = tid; v1 < 1000; v1 += 256) {
    long v5 = (long)((ulong)v1 + (ulong)v4);
    float v26 = b1[v5];
    float v25 = v26 * v28;
    b1[v5] = v25;
  }
}
