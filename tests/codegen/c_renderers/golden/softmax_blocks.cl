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
  float v1 = (-as_float(0x7f800000u));
  long v2 = 1000L;
  long v3 = (long)((ulong)v0 * (ulong)v2);
  float v5 = tid == 0 ? v1 : (-as_float(0x7f800000u));
  for (long v4 = tid; v4 < 1000; v4 += 256) {
    long v6 = (long)((ulong)v3 + (ulong)v4);
    float v7 = b0[v6];
    float v8 = v7 != v7 || v5 != v5 ? v7 + v5 : v5 > v7 ? v5 : v7;
    v5 = v8;
  }
  smelt_red_float[tid] = v5;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (long s = 128; s > 0; s >>= 1) {
    if (tid < s) smelt_red_float[tid] = smelt_red_float[tid] != smelt_red_float[tid] || smelt_red_float[tid + s] != smelt_red_float[tid + s] ? smelt_red_float[tid] + smelt_red_float[tid + s] : smelt_red_float[tid + s] > smelt_red_float[tid] ? smelt_red_float[tid + s] : smelt_red_float[tid];
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  }
  float v9 = smelt_red_float[0];
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  float v10 = 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  float v12 = tid == 0 ? v10 : 0.0f;
  for (long v11 = tid; v11 < 1000; v11 += 256) {
    long v13 = (long)((ulong)v3 + (ulong)v11);
    float v14 = b0[v13];
    float v15 = v14 - v9;
    float v16 = exp(v15);
    float v17 = v12 + v16;
    v12 = v17;
  }
  smelt_red_float[tid] = v12;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (long s = 128; s > 0; s >>= 1) {
    if (tid < s) smelt_red_float[tid] = smelt_red_float[tid] + smelt_red_float[tid + s];
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  }
  float v18 = smelt_red_float[0];
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  float v19 = 1.0f;
  float v20 = v19 / v18;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (long v21 = tid; v21 < 1000; v21 += 256) {
    long v22 = (long)((ulong)v21 + (ulong)v3);
    float v23 = b0[v22];
    float v24 = v23 - v9;
    float v25 = exp(v24);
    float v26 = v25 * v20;
    b1[v22] = v26;
  }
}
