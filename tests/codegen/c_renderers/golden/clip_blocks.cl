// kernel @fused_0 domain []
//   from fused %0
//   from mul %0
//   from reduce_sum %1
//   from rsqrt %2
//   from mul %3
//   from add %4
__kernel void k0_fused_0(__global const float* b0, long b0_off, __global const float* b1, long b1_off, __global float* b2, long b2_off, __global float* b3, long b3_off, long n) {
  __local float smelt_red_float[256];
  long p = (long)get_group_id(0);
  long tid = (long)get_local_id(0);
  b0 += b0_off;
  b1 += b1_off;
  b2 += b2_off;
  b3 += b3_off;
  float v0 = 0.0f;
  long v3 = 0L;
  float v2 = tid == 0 ? v0 : 0.0f;
  for (long v1 = tid; v1 < 4096; v1 += 256) {
    float v4 = b0[v1];
    float v5 = v4 * v4;
    float v6 = v2 + v5;
    v2 = v6;
  }
  smelt_red_float[tid] = v2;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (long s = 128; s > 0; s >>= 1) {
    if (tid < s) smelt_red_float[tid] = smelt_red_float[tid] + smelt_red_float[tid + s];
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  }
  float v7 = smelt_red_float[0];
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  b2[v3] = v7;
  float v11 = 1.0f / sqrt(v7);
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (long v8 = tid; v8 < 4096; v8 += 256) {
    float v9 = b1[v8];
    float v10 = b0[v8];
    float v12 = v10 * v11;
    float v13 = v9 + v12;
    b3[v8] = v13;
  }
}
