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
  float v2 = tid == 0 ? v0 : 0.0f;
  float smelt_row0[16];
  for (int rv1 = 0; rv1 < 16; ++rv1) {
    long v1 = tid + (long)rv1 * 256;
    float v3 = b0[v1];
    smelt_row0[rv1] = v3;
    float v4 = v3 * v3;
    float v5 = v4 + v2;
    v2 = v5;
  }
  smelt_red_float[tid] = v2;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (long s = 128; s > 0; s >>= 1) {
    if (tid < s) smelt_red_float[tid] = smelt_red_float[tid] + smelt_red_float[tid + s];
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  }
  float v6 = smelt_red_float[0];
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  long v7 = 0L;
  b2[v7] = v6;
  float v8 = 1.0f / sqrt(v6);
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (int rv9 = 0; rv9 < 16; ++rv9) {
    long v9 = tid + (long)rv9 * 256;
    float v10 = b1[v9];
    float v11 = smelt_row0[rv9];
    float v12 = v8 * v11;
    float v13 = v10 + v12;
    b3[v9] = v13;
  }
}
