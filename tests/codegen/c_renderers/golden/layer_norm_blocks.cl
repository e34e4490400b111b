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
__kernel void k0_fused_0(__global const float* b0, long b0_off, __global const float* b1, long b1_off, __global const float* b2, long b2_off, __global float* b3, long b3_off, long n) {
  __local float smelt_red_float[256];
  long p = (long)get_group_id(0);
  long tid = (long)get_local_id(0);
  b0 += b0_off;
  b1 += b1_off;
  b2 += b2_off;
  b3 += b3_off;
  long v0 = p;
  float v1 = 0.0f;
  long v2 = 1024L;
  long v3 = (long)((ulong)v0 * (ulong)v2);
  float v5 = tid == 0 ? v1 : 0.0f;
  float smelt_row0[4];
  for (int rv4 = 0; rv4 < 4; ++rv4) {
    long v4 = tid + (long)rv4 * 256;
    long v6 = (long)((ulong)v4 + (ulong)v3);
    float v7 = b0[v6];
    smelt_row0[rv4] = v7;
    float v8 = v5 + v7;
    v5 = v8;
  }
  smelt_red_float[tid] = v5;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (long s = 128; s > 0; s >>= 1) {
    if (tid < s) smelt_red_float[tid] = smelt_red_float[tid] + smelt_red_float[tid + s];
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  }
  float v9 = smelt_red_float[0];
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  float v10 = 1024.0f;
  float v11 = v9 / v10;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  float v13 = tid == 0 ? v1 : 0.0f;
  for (int rv12 = 0; rv12 < 4; ++rv12) {
    long v12 = tid + (long)rv12 * 256;
    long v14 = (long)((ulong)v3 + (ulong)v12);
    float v15 = smelt_row0[rv12];
    float v16 = v15 - v11;
    float v17 = v16 * v16;
    float v18 = v13 + v17;
    v13 = v18;
  }
  smelt_red_float[tid] = v13;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (long s = 128; s > 0; s >>= 1) {
    if (tid < s) smelt_red_float[tid] = smelt_red_float[tid] + smelt_red_float[tid + s];
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  }
  float v19 = smelt_red_float[0];
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  float v20 = v19 / v10;
  float v21 = 1e-05f;
  float v22 = v20 + v21;
  float v23 = 1.0f / sqrt(v22);
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (int rv24 = 0; rv24 < 4; ++rv24) {
    long v24 = tid + (long)rv24 * 256;
    long v25 = (long)((ulong)v24 + (ulong)v3);
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
